"""Drop-in modules that the rewrites put in place of transformers' own (on a deep copy of the model).

Every class here computes the same function as the module it replaces; the rewrite that installs it documents how exact
it is.  Shapes are static: the export size is fixed, so reshapes take Python ints, never tensors.
"""

from __future__ import annotations

import torch
from torch import nn


class EdgeBackbone(nn.Module):
    """Dinov2Backbone without the attention mask: embeddings -> layers -> shared LayerNorm at the out stages.

    Holds the original submodules (``embeddings``, ``layers``, ``layernorm``), so later rewrites can swap them.  Keeps
    ``forward_with_filtered_kwargs`` because DepthAnythingForDepthEstimation.forward calls it.
    """

    def __init__(self, embeddings: nn.Module, layers: nn.ModuleList, layernorm: nn.Module, out_layers: list[int],
                 apply_layernorm: bool):
        super().__init__()
        self.embeddings = embeddings
        self.layers = layers
        self.layernorm = layernorm
        self.out_layers = list(out_layers)      # 1-based layer numbers whose outputs are feature maps
        self.apply_layernorm = apply_layernorm

    def forward(self, pixel_values: torch.Tensor):
        from transformers.modeling_outputs import BackboneOutput

        hidden = self.embeddings(pixel_values)
        feats = []
        for i, layer in enumerate(self.layers, start=1):
            hidden = layer(hidden, None)
            if i in self.out_layers:
                feats.append(self.layernorm(hidden) if self.apply_layernorm else hidden)
        return BackboneOutput(feature_maps=tuple(feats))

    def forward_with_filtered_kwargs(self, pixel_values: torch.Tensor, **kwargs):
        return self(pixel_values)


class FrozenEmbeddings(nn.Module):
    """Patch conv + CLS token + a position embedding precomputed for one input size.

    ``cls_pos`` = cls_token + position_embeddings[:, :1]; ``patch_pos`` = the interpolated patch position embeddings.
    ``cat(cls, patches) + pos`` == ``cat(cls + pos[:1], patches + pos[1:])`` element by element (same float adds).
    """

    def __init__(self, patch_embeddings: nn.Module, cls_pos: torch.Tensor, patch_pos: torch.Tensor,
                 height: int, width: int):
        super().__init__()
        self.patch_embeddings = patch_embeddings
        self.register_buffer("cls_pos", cls_pos.detach().clone())
        self.register_buffer("patch_pos", patch_pos.detach().clone())
        self.height, self.width = height, width

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        if tuple(pixel_values.shape[2:]) != (self.height, self.width):
            raise ValueError(f"FrozenEmbeddings was frozen for {self.height}x{self.width}, got {tuple(pixel_values.shape)}")
        conv = self.patch_embeddings.projection
        p = conv(pixel_values.to(conv.weight.dtype))                       # [1, D, h, w]
        # NHWC-friendly flattening (same values as flatten(2).transpose(1, 2)): the converter keeps convs in NHWC,
        # so permute(0, 2, 3, 1) is free and only one RESHAPE remains.
        patches = p.permute(0, 2, 3, 1).reshape(p.shape[0], -1, p.shape[1])
        return torch.cat((self.cls_pos, patches + self.patch_pos), dim=1)


class EdgeAttention(nn.Module):
    """Eager self-attention with static head reshapes and a rank-3 [1, N, D] input to every projection.

    ``qkv`` (one fused Linear, output [q | k | v]) replaces ``q_proj/k_proj/v_proj`` once ``fuse_qkv`` ran.
    ``scaling`` is 1.0 once ``fold_attention_scale`` ran.
    """

    def __init__(self, src: nn.Module):
        super().__init__()
        self.num_heads = src.num_attention_heads
        self.head_dim = src.head_dim
        self.scaling = float(src.scaling)
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = src.q_proj, src.k_proj, src.v_proj, src.o_proj
        self.register_module("qkv", None)       # set by fuse_qkv
        self.rank4 = False                      # set by rank4_attention

    def forward(self, hidden_states: torch.Tensor, attention_mask=None, **kwargs):
        b, n, _ = hidden_states.shape
        if b != 1:
            raise ValueError("EdgeAttention is written for batch 1 (the export contract)")
        h, d = self.num_heads, self.head_dim
        # rank-3 [heads, N, d] tensors: BATCH_MATMUL without reshapes around it, K^T as adj_y (no TRANSPOSE)
        if self.qkv is not None:
            qkv = self.qkv(hidden_states).reshape(n, 3 * h, d).transpose(0, 1)      # [3h, N, d]
            q, k, v = torch.split(qkv, h, dim=0)
        else:
            q = self.q_proj(hidden_states).reshape(n, h, d).transpose(0, 1)
            k = self.k_proj(hidden_states).reshape(n, h, d).transpose(0, 1)
            v = self.v_proj(hidden_states).reshape(n, h, d).transpose(0, 1)
        if self.scaling != 1.0:
            q = q * self.scaling
        if self.rank4:      # the same products on [1, h, N, d]: the GPU delegate's faster BATCH_MATMUL layout
            q, k, v = (t.reshape(1, h, n, d) for t in (q, k, v))
            attn = torch.softmax(torch.matmul(q, k.transpose(2, 3)), dim=-1)
            out = torch.matmul(attn, v).reshape(h, n, d)
        else:
            attn = torch.softmax(torch.matmul(q, k.transpose(1, 2)), dim=-1)
            out = torch.matmul(attn, v)
        return self.o_proj(out.transpose(0, 1).reshape(1, n, h * d)), None


class EdgeLayerNorm(nn.Module):
    """LayerNorm over the last dim with keep-dims reductions and eps added before the variance mean.

    ``mean((x - m)^2 + eps)`` instead of ``mean((x - m)^2) + eps``: same value to float rounding, and the converter
    then keeps the MEAN's kept dim (otherwise it emits MEAN -> [1, N], ADD, RESHAPE -> [1, N, 1]).
    ``weight``/``bias`` are None once ``fold_layernorm_affine`` moved them into the following linear layer(s);
    ``centered`` is True once ``center_residual_stream`` made the input zero-mean by construction.
    """

    def __init__(self, src: nn.LayerNorm):
        super().__init__()
        self.eps = float(src.eps)
        self.weight = None if src.weight is None else nn.Parameter(src.weight.detach().clone(), requires_grad=False)
        self.bias = None if src.bias is None else nn.Parameter(src.bias.detach().clone(), requires_grad=False)
        self.centered = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x if self.centered else x - x.mean(dim=-1, keepdim=True)
        y = d * torch.rsqrt((d * d + self.eps).mean(dim=-1, keepdim=True))
        if self.weight is not None:
            y = y * self.weight
        if self.bias is not None:
            y = y + self.bias
        return y


class RankPreservingLinear(nn.Module):
    """``F.linear(x, W) + b``: same maths as nn.Linear, but the converter emits a FULLY_CONNECTED that keeps the
    input's rank (keep_num_dims=True) instead of ``addmm`` on a [N, D] view whose output RESHAPE it then drops in
    front of a broadcasting ADD (LiteRT #9481)."""

    def __init__(self, src: nn.Linear):
        super().__init__()
        self.in_features, self.out_features = src.in_features, src.out_features
        self.weight = nn.Parameter(src.weight.detach().clone(), requires_grad=False)
        b = src.bias.detach().clone() if src.bias is not None else torch.zeros(src.out_features)
        self.bias = nn.Parameter(b, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x, self.weight) + self.bias


class TokenReassemble(nn.Module):
    """DPT reassemble stage working on tokens: 1x1 projection as a Linear on [1, N, D], drop CLS, one reshape to NHWC.

    Same maths as DepthAnythingReassembleStage (slice CLS -> reshape -> NCHW -> 1x1 conv -> resize): a 1x1 conv is a
    per-token Linear, so it commutes with dropping the CLS token and with the layout change.
    """

    def __init__(self, src: nn.Module, patch_height: int, patch_width: int):
        super().__init__()
        self.proj = nn.ModuleList()
        self.resize = nn.ModuleList()
        for layer in src.layers:
            conv = layer.projection
            lin = nn.Linear(conv.in_channels, conv.out_channels, bias=conv.bias is not None)
            with torch.no_grad():
                lin.weight.copy_(conv.weight.reshape(conv.out_channels, conv.in_channels))
                if conv.bias is not None:
                    lin.bias.copy_(conv.bias)
            self.proj.append(lin)
            self.resize.append(layer.resize)
        self.patch_height, self.patch_width = patch_height, patch_width

    def forward(self, hidden_states, patch_height=None, patch_width=None):
        ph, pw = self.patch_height, self.patch_width
        out = []
        for proj, resize, h in zip(self.proj, self.resize, hidden_states):
            t = proj(h[:, 1:])
            c = t.shape[-1]
            t = t.reshape(1, ph, pw, c).permute(0, 3, 1, 2)
            out.append(resize(t))
        return out


class PerHeadAttention(nn.Module):
    """Self-attention written head by head: per head, three [1, N, D] -> [1, N, d] projections, ``softmax(q k^T) v`` on
    rank-3 [1, N, *] tensors, then one CONCATENATION of the heads on the channel axis before ``o_proj``.

    No RESHAPE, TRANSPOSE or SPLIT anywhere in the attention path (the head-major [h, N, d] layout is never formed);
    every op keeps the token-major [1, N, C] layout the GPU delegate stores as BHWC.  Same dot products as
    :class:`EdgeAttention` (each projection output column, each score, each weighted sum).
    """

    def __init__(self, src: EdgeAttention):
        super().__init__()
        if src.scaling != 1.0:
            raise ValueError("PerHeadAttention expects the attention scale folded into q (fold_attention_scale)")
        h, d = src.num_heads, src.head_dim
        if src.qkv is not None:
            w, b = src.qkv.weight, src.qkv.bias
            parts = [(w[i * h * d:(i + 1) * h * d], None if b is None else b[i * h * d:(i + 1) * h * d])
                     for i in range(3)]
        else:
            parts = [(p.weight, p.bias) for p in (src.q_proj, src.k_proj, src.v_proj)]
        self.num_heads, self.head_dim = h, d
        self.q, self.k, self.v = (nn.ModuleList(_head_linears(w, b, h, d)) for w, b in parts)
        self.o_proj = src.o_proj

    def forward(self, hidden_states: torch.Tensor, attention_mask=None, **kwargs):
        if hidden_states.shape[0] != 1:
            raise ValueError("PerHeadAttention is written for batch 1 (the export contract)")
        heads = []
        for q, k, v in zip(self.q, self.k, self.v):
            s = torch.matmul(q(hidden_states), k(hidden_states).transpose(1, 2))      # [1, N, N]
            heads.append(torch.matmul(torch.softmax(s, dim=-1), v(hidden_states)))    # [1, N, d]
        return self.o_proj(torch.cat(heads, dim=-1)), None


def _head_linears(weight: torch.Tensor, bias, heads: int, head_dim: int) -> list[nn.Module]:
    """One RankPreservingLinear per head from a [heads*head_dim, D] weight (rows of head i = i*d .. (i+1)*d)."""
    out = []
    for i in range(heads):
        lin = nn.Linear(weight.shape[1], head_dim, bias=True)
        with torch.no_grad():
            lin.weight.copy_(weight[i * head_dim:(i + 1) * head_dim])
            lin.bias.copy_(bias[i * head_dim:(i + 1) * head_dim] if bias is not None else torch.zeros(head_dim))
        out.append(RankPreservingLinear(lin.requires_grad_(False)))
    return out


class SymbolicSizeHead(nn.Module):
    """The Depth Anything head with the output size kept symbolic: ``interpolate(size=(ph * 14, pw * 14))`` on the
    patch grid the model passes in, without transformers' ``int(...)`` around it.

    Holds the original convolutions and activations under their names (``conv1``, ``conv2``, ``conv3``,
    ``activation1``, ``activation2``), so the FP16 topology and later folds find them.
    """

    def __init__(self, src: nn.Module):
        super().__init__()
        self.head_in_index, self.patch_size, self.max_depth = src.head_in_index, src.patch_size, src.max_depth
        self.conv1, self.conv2, self.conv3 = src.conv1, src.conv2, src.conv3
        self.activation1, self.activation2 = src.activation1, src.activation2

    def forward(self, hidden_states: list[torch.Tensor], patch_height, patch_width) -> torch.Tensor:
        x = self.conv1(hidden_states[self.head_in_index])
        x = nn.functional.interpolate(x, (patch_height * self.patch_size, patch_width * self.patch_size),
                                      mode="bilinear", align_corners=True)
        x = self.conv3(self.activation1(self.conv2(x)))
        return (self.activation2(x) * self.max_depth).squeeze(dim=1)


class StaticRope(nn.Module):
    """Depth Anything 3's 2-D rotary position embedding with its frequency-table length fixed (``da3_static_rope``):
    the package's own ``_compute_frequency_components`` / ``_apply_1d_rope`` on the same length the package derives
    from the positions at run time (``int(positions.max()) + 1``, which torch.export cannot trace)."""

    def __init__(self, rope: nn.Module, max_position: int):
        super().__init__()
        self.rope = rope
        self.max_position = int(max_position)

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        dim = tokens.size(-1) // 2
        cos, sin = self.rope._compute_frequency_components(dim, self.max_position, tokens.device, tokens.dtype)
        vertical, horizontal = tokens.chunk(2, dim=-1)
        return torch.cat((self.rope._apply_1d_rope(vertical, positions[..., 0], cos, sin),
                          self.rope._apply_1d_rope(horizontal, positions[..., 1], cos, sin)), dim=-1)


class DA3Attention(nn.Module):
    """Depth Anything 3's attention (``da3_rank4_attention``) on rank-4 tensors only: q, k, v as channel slices of the
    qkv output, each [B, h, N, d]; the package's QK-norm and rotary embedding modules unchanged; softmax(q k^T / sqrt(d))
    v written out (the package calls scaled_dot_product_attention on a 5-D reshape + permute of qkv, which LiteRT's GPU
    delegate rejects: "Tensor dimensions must be less than 5")."""

    def __init__(self, attn: nn.Module):
        super().__init__()
        self.num_heads, self.scale = attn.num_heads, attn.scale
        self.qkv, self.q_norm, self.k_norm, self.proj, self.rope = attn.qkv, attn.q_norm, attn.k_norm, attn.proj, attn.rope

    def forward(self, x: torch.Tensor, pos=None, attn_mask=None) -> torch.Tensor:
        b, n, c = x.shape
        h = self.num_heads
        qkv = self.qkv(x)

        def heads(t):
            return t.reshape(b, n, h, c // h).permute(0, 2, 1, 3)

        q, k, v = heads(qkv[..., :c]), heads(qkv[..., c:2 * c]), heads(qkv[..., 2 * c:])
        q, k = self.q_norm(q), self.k_norm(k)
        if self.rope is not None and pos is not None:
            q, k = self.rope(q, pos), self.rope(k, pos)
        attn = torch.softmax((q * self.scale) @ k.transpose(-2, -1), dim=-1)
        return self.proj((attn @ v).permute(0, 2, 1, 3).reshape(b, n, c))
