import sys, json, numpy as np
sys.path.insert(0, "/work/main/src")
from edgedepth.formats.tflite import gpu_check
path = sys.argv[1]
x = np.load(path + ".x.npy") if len(sys.argv) > 2 else None
r = gpu_check(path, x=x)
out = r.pop("output", None)
print(json.dumps(r, indent=1))
if out is not None:
    ref = np.load(path + ".ref.npy")[0]
    print("GPU (enforce_f32) depth rel L2 vs torch:", float(np.linalg.norm(out - ref) / np.linalg.norm(ref)))
