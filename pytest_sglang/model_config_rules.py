"""SGLang 0.5.23's ``ModelConfig`` checks of ``--quantization`` against the checkpoint: one
copy for the simulator and the offline predictor.

Why shared: whether a ``--quantization`` the user sets fits the checkpoint's own
``quantization_config.quant_method`` is decided from the command line and config.json alone,
before anything runs; the simulator logs and refuses it in resolution's order
(:mod:`.sim.post_init`) and the predictor (:mod:`.refusals`) refuses it before deploy, with
the same line. Read off ``ModelConfig._verify_quantization`` (``configs/model_config.py``) for
a target model (a draft's own rules are not modelled) on CUDA, for the checkpoint methods no
quantization class rewrites (``override_quantization_method``): ``fp8`` and ``mxfp4`` (and
none). Other checkpoint methods (AWQ/GPTQ to Marlin, ModelOpt, compressed-tensors, ...) are
rewritten by GPU-dependent classes and stay silent here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["QuantizationCheck", "verify_quantization"]

#: ``compatible_quantization_methods``: a CLI method kept over the checkpoint's
COMPATIBLE = {
    "modelopt_fp8": ("modelopt",),
    "modelopt_fp4": ("modelopt", "fp8"),
    "modelopt_mixed": ("modelopt",),
    "nvfp4_online": ("fp8", "modelopt_fp8"),
    "minimax_m3_nvfp4": ("mxfp8",),
    "petit_nvfp4": ("modelopt",),
    "w8a8_int8": ("compressed-tensors", "compressed_tensors"),
    "w8a8_fp8": ("compressed-tensors", "compressed_tensors"),
    "auto-round-int8": ("compressed-tensors", "compressed_tensors"),
}
#: ``REQUANTIZATION_METHODS``: online requantization of a quantized checkpoint
REQUANTIZATION = ("quark_mxfp4",)
#: checkpoint methods no ``override_quantization_method`` rewrites on CUDA (humming's only
#: for a non-MXFP4 checkpoint, and only when it is asked for)
MODELLED_CHECKPOINTS = frozenset({"fp8", "mxfp4"})
MISMATCH_ERROR = (
    "ValueError: Quantization method specified in the model config ({checkpoint}) does not "
    "match the quantization method specified in the `quantization` argument ({cli})."
)
COMPATIBLE_INFO = (
    "Using CLI-specified quantization ({cli}) which is compatible with HF config quant_method "
    "({checkpoint})."
)
REQUANTIZING_INFO = (
    "Requantizing from quant_method='{checkpoint}' to the requested online "
    "quantization='{cli}'. Beware that requantization may incur a loss in accuracy, the "
    "requantized model should be re-validated/re-evaluated. More details at "
    "https://docs.sglang.io/advanced_features/quantization.html#online-quantization."
)


@dataclass
class QuantizationCheck:
    """What ``_verify_quantization`` settles: the quantization in effect (None: unknown
    here, or none), what it logs, and the error line where it refuses."""

    quantization: str | None
    messages: list[str] = field(default_factory=list)
    error: str | None = None


def verify_quantization(cli: str | None, checkpoint: str | None) -> QuantizationCheck:
    """``_verify_quantization`` for a target model: ``cli`` is ``--quantization``,
    ``checkpoint`` the config.json's ``quantization_config.quant_method``."""
    cli = cli.lower() if cli else None
    checkpoint = checkpoint.lower() if checkpoint else None
    if checkpoint is None or cli is None or cli == checkpoint:
        return QuantizationCheck(cli or checkpoint)
    if checkpoint not in MODELLED_CHECKPOINTS:
        return QuantizationCheck(cli)
    if cli == "humming" and checkpoint != "mxfp4":
        return QuantizationCheck(cli)  # HummingConfig.override_quantization_method
    if checkpoint in COMPATIBLE.get(cli, ()):
        return QuantizationCheck(cli, [COMPATIBLE_INFO.format(cli=cli, checkpoint=checkpoint)])
    if cli in REQUANTIZATION:
        return QuantizationCheck(cli, [REQUANTIZING_INFO.format(cli=cli, checkpoint=checkpoint)])
    return QuantizationCheck(cli, error=MISMATCH_ERROR.format(checkpoint=checkpoint, cli=cli))
