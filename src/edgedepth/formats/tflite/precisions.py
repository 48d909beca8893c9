"""The LiteRT precision ladder: every ``.tflite`` precision beyond FP32 is an ``ai-edge-quantizer`` recipe applied to
the optimised FP32 file (no hand-written quantisation).  Adding a precision = adding one :class:`Precision` line.

=============  ==============================================================================================
fp32           the converted graph itself
fp16           float16 weights of FULLY_CONNECTED / CONV_2D / TRANSPOSE_CONV (``FLOAT_CASTING``, weight-only: a
               DEQUANTIZE per weight, float32 compute; LiteRT's GPU reads the fp16 constants natively)
int8           dynamic range: int8 channelwise weights, float activations quantised on the fly (``dynamic_wi8_afp32``)
int4           dynamic range: FULLY_CONNECTED 4-bit blockwise (block of 32 along the input dim; 86 % of the weights),
               CONV_2D and TRANSPOSE_CONV 8-bit channelwise (4-bit convolutions tripled the error on the synthetic
               model: benchmarks/precision_ladder.py; the quantizer has no 4-bit TRANSPOSE_CONV)
static-int8    int8 weights *and* activations of FULLY_CONNECTED and CONV_2D (static ranges calibrated on the bundled
               photos; QUANTIZE / DEQUANTIZE around them), every other op float32.  Quantising every op
               (``static_wi8_ai8`` as is) measured 10x the error and 5.6x the CPU time, and its GPU shader fails
               to compile (benchmarks/precision_ladder.py, row static-int8-all)
a16w8          int16 activations, int8 weights (``static_wi8_ai16``), calibrated the same way
=============  ==============================================================================================

Calibration images: the full-frame view of each of the 11 bundled photos (``edgedepth.images``), preprocessed at the
export size — fixed inputs, so a static file is as reproducible as the others.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from ...errors import EdgedepthError
from ...fsutil import write_bytes_atomic
from ...images import default_image_set
from ...preprocess import preprocess
from ...progress import quiet_output as _quiet

INT4_BLOCK = 32             # FULLY_CONNECTED input-dim block of the int4 file (divides 384, 1536 and tiny's 32)
CALIBRATION_VIEW = "full"   # one view per bundled photo


@dataclasses.dataclass(frozen=True)
class Precision:
    name: str                           # --precision value, manifest "precision"
    summary: str                        # one line for the manifest / model card
    recipe: Callable[[], object] | None  # () -> ai-edge-quantizer recipe; None for fp32
    calibrated: bool = False            # needs calibration inputs (static activation ranges)

    @property
    def file_part(self) -> str:
        """The precision's part of a file name (``static-int8`` -> ``static_int8``)."""
        return self.name.replace("-", "_")


def _ops():
    from ai_edge_quantizer import qtyping

    return qtyping.TFLOperationName


def _fp16():
    from ai_edge_quantizer.algorithm_manager import AlgorithmName
    from ai_edge_quantizer.recipe_manager import RecipeManager

    rm = RecipeManager()
    rm.add_weight_only_config(regex=".*", operation_name=_ops().ALL_SUPPORTED, num_bits=16,
                              algorithm_key=AlgorithmName.FLOAT_CASTING)
    return rm.get_quantization_recipe()


def _int8():
    from ai_edge_quantizer import recipe

    return recipe.dynamic_wi8_afp32()


def _int4():
    from ai_edge_quantizer import qtyping
    from ai_edge_quantizer.recipe_manager import RecipeManager

    rm = RecipeManager()
    rm.add_dynamic_config(regex=".*", operation_name=_ops().FULLY_CONNECTED, num_bits=4,
                          granularity=qtyping.QuantGranularity(f"BLOCKWISE_{INT4_BLOCK}"))
    for conv in (_ops().CONV_2D, _ops().CONV_2D_TRANSPOSE):
        rm.add_dynamic_config(regex=".*", operation_name=conv, num_bits=8)
    return rm.get_quantization_recipe()


def static_recipe(activation_bits: int, ops=None):
    """Static recipe (int8 weights, ``activation_bits`` activations) on ``ops`` (default: every supported op); the
    graph's float32 input and output are kept."""
    def make():
        from ai_edge_quantizer.algorithm_manager import AlgorithmName
        from ai_edge_quantizer.recipe_manager import RecipeManager

        T = _ops()
        rm = RecipeManager()
        for op in [T(o) for o in ops] if ops else [T.ALL_SUPPORTED]:
            rm.add_static_config(regex=".*", operation_name=op, activation_num_bits=activation_bits,
                                 weight_num_bits=8)
        for edge in (T.INPUT, T.OUTPUT):    # keep the float32 signature: quantise after the input, not the input
            rm.add_quantization_config(regex=".*", operation_name=edge, algorithm_key=AlgorithmName.NO_QUANTIZE)
        return rm.get_quantization_recipe()
    return make


LADDER: dict[str, Precision] = {p.name: p for p in (
    Precision("fp32", "float32 weights and compute", None),
    Precision("fp16", "float16 weights (FC/CONV), float32 compute (ai-edge-quantizer FLOAT_CASTING)", _fp16),
    Precision("int8", "dynamic_wi8_afp32 (int8 weights, float activations)", _int8),
    Precision("int4", f"dynamic: FC int4 weights blockwise (block {INT4_BLOCK}), convolutions int8 channelwise, "
                      "float activations", _int4),
    Precision("static-int8", "static int8 weights and activations on FULLY_CONNECTED and CONV_2D (calibrated), "
                             "other ops float32", static_recipe(8, ("FULLY_CONNECTED", "CONV_2D")), calibrated=True),
    Precision("a16w8", "static_wi8_ai16 (int16 activations, int8 weights, calibrated; float32 input/output)",
              static_recipe(16), calibrated=True),
)}


def calibration_inputs(height: int, width: int) -> list:
    """Preprocessed [1,3,H,W] inputs the static precisions calibrate on (one per bundled photo)."""
    return [preprocess(item.load(), (height, width)) for item in default_image_set()
            if item.id.endswith("/" + CALIBRATION_VIEW)]


def quantize(fp32_path: str, path: str, precision, *, calibration=None, verbose: bool = False) -> None:
    """Write ``precision``'s file (a ladder name, or a :class:`Precision` a benchmark defines) made from the FP32
    .tflite ``fp32_path``, atomically.

    ``calibration``: list of [1,3,H,W] float32 inputs, required by calibrated precisions.  A recipe the quantizer
    cannot apply to this graph raises a one-line :class:`EdgedepthError`; nothing is left at ``path``.
    """
    p = precision if isinstance(precision, Precision) else LADDER.get(precision)
    if p is None or p.recipe is None:
        raise EdgedepthError(f"precision {precision!r} is not made by quantisation (choose from "
                             f"{', '.join(n for n, q in LADDER.items() if q.recipe)})")
    precision = p.name
    if p.calibrated and not calibration:
        raise EdgedepthError(f"precision {precision!r} needs calibration inputs")
    from ai_edge_quantizer import quantizer

    try:
        with _quiet(not verbose):
            q = quantizer.Quantizer(fp32_path)
            q.load_quantization_recipe(p.recipe())
            if p.calibrated:
                ranges = q.calibrate({"serving_default": [{"args_0": x} for x in calibration]})
                result = q.quantize(ranges)
            else:
                result = q.quantize()
            # written from Python, not by the quantizer's mmap (a full disk would kill the process with SIGBUS)
            write_bytes_atomic(path, bytes(result.quantized_model))
    except EdgedepthError:
        raise
    except Exception as e:      # the quantizer's own message names the op / config it cannot handle
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        raise EdgedepthError(f"ai-edge-quantizer cannot make the {precision} file for this graph: {first}") from None
