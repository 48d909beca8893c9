"""Parts for carrying large things to the device machine, one call's carry at a time (benchmarks/devices/browser_device.sh).

``pack STAGE_DIR PARTS_DIR --cap-mib 60``: STAGE_DIR/ITEMS.tsv lists the items in order (name, action, dest, file of
STAGE_DIR); their bytes are laid end to end and cut into parts of at most ``cap`` bytes each, an item's pieces split
wherever a part ends (so no space is wasted; an item is whole again once every part holding a piece of it has
arrived). Each part is a folder PARTS_DIR/pN holding its pieces (``NAME.K``), INDEX.tsv (every item of every part:
name, pieces, bytes, sha256, action, dest, part numbers) and CONTENTS.txt. Actions: ``tar`` (a .tar.xz extracted
into ROOT/dest), ``file`` (the bytes become ROOT/dest).

``assemble PARTS_DIR ROOT``: moves the pieces of every part present into ROOT/incoming (the part folder is removed),
then makes whole every item whose pieces have all arrived (sha256 checked) and says what is still missing and in
which parts. Run it as often as you like: it only does what is new.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tarfile

FIELDS = ("name", "pieces", "bytes", "sha256", "action", "dest", "parts")


from edgedepth.fsutil import sha256_file as _sha256  # noqa: E402


def pack(stage: str, parts_dir: str, cap: int) -> int:
    items = []
    with open(os.path.join(stage, "ITEMS.tsv")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, action, dest, rel = line.rstrip("\n").split("\t")
                path = os.path.join(stage, rel)
                items.append({"name": name, "action": action, "dest": dest, "path": path,
                              "bytes": os.path.getsize(path), "sha256": _sha256(path)})
    budget = cap - 64 * 1024                      # room for INDEX.tsv and CONTENTS.txt
    layout: list[list[tuple[str, int, int, int]]] = [[]]   # per part: (item, piece, offset, length)
    free = budget
    for it in items:
        off, k = 0, 0
        while off < it["bytes"] or (it["bytes"] == 0 and k == 0):
            if free == 0:
                layout.append([])
                free = budget
            n = min(free, it["bytes"] - off)
            k += 1
            layout[-1].append((it["name"], k, off, n))
            off += n
            free -= n
            if it["bytes"] == 0:
                break
    by_name = {it["name"]: it for it in items}
    for it in items:
        where = [(p, k) for p, part in enumerate(layout, 1) for (nm, k, _, _) in part if nm == it["name"]]
        it["pieces"] = len(where)
        it["parts"] = ",".join(f"p{p}" for p in sorted({p for p, _ in where}))
    if os.path.isdir(parts_dir):
        shutil.rmtree(parts_dir)
    index = "\t".join(FIELDS) + "\n" + "".join(
        "\t".join(str(it[k]) for k in FIELDS) + "\n" for it in items)
    for p, part in enumerate(layout, 1):
        d = os.path.join(parts_dir, f"p{p}")
        os.makedirs(d)
        lines = []
        for nm, k, off, n in part:
            it = by_name[nm]
            with open(it["path"], "rb") as src, open(os.path.join(d, f"{nm}.{k}"), "wb") as dst:
                src.seek(off)
                left = n
                while left:
                    b = src.read(min(left, 8 << 20))
                    dst.write(b)
                    left -= len(b)
            lines.append(f"{nm}.{k}  ({k}/{it['pieces']})  {n / 2**20:7.2f} MiB  -> {it['action']} {it['dest']}")
        with open(os.path.join(d, "INDEX.tsv"), "w") as f:
            f.write(index)
        with open(os.path.join(d, "CONTENTS.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


class _Chain:
    """The pieces of one item read as one file (for tarfile's stream mode)."""

    def __init__(self, paths: list[str]):
        self.paths, self.f = list(paths), None

    def read(self, n: int = -1) -> bytes:
        out = b""
        while n != 0:
            if self.f is None:
                if not self.paths:
                    break
                self.f = open(self.paths.pop(0), "rb")
            b = self.f.read(n if n > 0 else -1)
            if not b:
                self.f.close()
                self.f = None
                continue
            out += b
            n = n - len(b) if n > 0 else -1
        return out


def _index(paths: list[str]) -> dict[str, dict]:
    items: dict[str, dict] = {}
    for path in paths:
        with open(path) as f:
            head = f.readline().rstrip("\n").split("\t")
            for line in f:
                if line.strip():
                    it = dict(zip(head, line.rstrip("\n").split("\t")))
                    items[it["name"]] = it
    return items


def assemble(parts_dir: str, root: str) -> int:
    incoming = os.path.join(root, "incoming")
    done_dir = os.path.join(root, "done")
    os.makedirs(incoming, exist_ok=True)
    os.makedirs(done_dir, exist_ok=True)
    arrived = []
    if os.path.isdir(parts_dir):
        for p in sorted(os.listdir(parts_dir), key=lambda s: (len(s), s)):
            d = os.path.join(parts_dir, p)
            if not (p.startswith("p") and os.path.isfile(os.path.join(d, "INDEX.tsv"))):
                continue
            shutil.copyfile(os.path.join(d, "INDEX.tsv"), os.path.join(root, "INDEX.tsv"))
            for n in os.listdir(d):
                if n not in ("INDEX.tsv", "CONTENTS.txt"):
                    shutil.move(os.path.join(d, n), os.path.join(incoming, n))
            shutil.rmtree(d)
            arrived.append(p)
    print(f"parts moved in now: {', '.join(arrived) or 'none'}")
    if not os.path.isfile(os.path.join(root, "INDEX.tsv")):
        print(f"no part has arrived yet ({parts_dir} holds none)", file=sys.stderr)
        return 1
    items = _index([os.path.join(root, "INDEX.tsv")])
    missing_parts: set[str] = set()
    for name, it in items.items():
        if os.path.exists(os.path.join(done_dir, name)):
            continue
        pieces = [os.path.join(incoming, f"{name}.{k}") for k in range(1, int(it["pieces"]) + 1)]
        if not all(os.path.isfile(p) for p in pieces):
            have = sum(os.path.isfile(p) for p in pieces)
            print(f"  waiting: {name} ({have}/{len(pieces)} pieces; in {it['parts']})")
            # piece k lies in the k-th part of the item's list (pieces are laid one a part, in order)
            missing_parts.update(part for part, p in zip(it["parts"].split(","), pieces) if not os.path.isfile(p))
            continue
        h = hashlib.sha256()
        ch = _Chain(pieces)
        for b in iter(lambda: ch.read(1 << 20), b""):
            h.update(b)
        if h.hexdigest() != it["sha256"]:
            print(f"  BAD: {name}: sha256 {h.hexdigest()} != {it['sha256']} (pieces kept; carry its parts again)")
            continue
        dest = os.path.join(root, it["dest"])
        if it["action"] == "tar":
            os.makedirs(dest, exist_ok=True)
            with tarfile.open(fileobj=_Chain(pieces), mode="r|xz") as tf:
                if hasattr(tarfile, "data_filter"):
                    tf.extractall(dest, filter="data")
                else:
                    tf.extractall(dest)
        elif it["action"] == "file":
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            ch = _Chain(pieces)
            with open(dest + ".tmp", "wb") as f:
                for b in iter(lambda: ch.read(8 << 20), b""):
                    f.write(b)
            os.replace(dest + ".tmp", dest)
        else:
            print(f"  BAD: {name}: unknown action {it['action']!r}")
            continue
        for p in pieces:
            os.remove(p)
        open(os.path.join(done_dir, name), "w").close()
        print(f"  done: {name} -> {it['dest']} ({int(it['bytes']) / 2**20:.1f} MiB)")
    done = [n for n in items if os.path.exists(os.path.join(done_dir, n))]
    print(f"items whole: {len(done)}/{len(items)}" + (f"; parts still to carry: "
          f"{', '.join(sorted(missing_parts, key=lambda s: int(s[1:])))}" if missing_parts else ""))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("stage")
    p.add_argument("parts_dir")
    p.add_argument("--cap-mib", type=float, default=60)
    a = sub.add_parser("assemble")
    a.add_argument("parts_dir")
    a.add_argument("root")
    s = sub.add_parser("status")
    s.add_argument("root")
    args = ap.parse_args(argv)
    if args.cmd == "pack":
        return pack(args.stage, args.parts_dir, int(args.cap_mib * 2**20))
    if args.cmd == "status":
        items = _index([os.path.join(args.root, "INDEX.tsv")])
        return 0 if all(os.path.exists(os.path.join(args.root, "done", n)) for n in items) else 1
    return assemble(args.parts_dir, args.root)


if __name__ == "__main__":
    sys.exit(main())
