"""Photos available offline, for demos and tests (no downloads)."""

from __future__ import annotations

import os


def sample_photo() -> str:
    """Grace Hopper portrait (US Navy photo, public domain) shipped with matplotlib's sample data: 600x512 JPEG."""
    import matplotlib

    path = os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data", "sample_data", "grace_hopper.jpg")
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    return path


if __name__ == "__main__":
    print(sample_photo())
