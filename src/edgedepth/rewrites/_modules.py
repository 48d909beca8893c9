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
    the package's own frequency tables (:meth:`tables`) and ``_apply_1d_rope`` on the same length the package derives
    from the positions at run time (``int(positions.max()) + 1``, which torch.export cannot trace)."""

    def __init__(self, rope: nn.Module, max_position: int):
        super().__init__()
        self.rope = rope
        self.max_position = int(max_position)

    def tables(self, dim: int, device, dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """(cos, sin): the package's ``_compute_frequency_components`` -- the same ops in the same order -- without
        its cache.  Through the cache, an export traced the tables as ops or, after a PyTorch run at that size (a
        release's parity gate) had filled it, as constants: other bytes for the same job, depending on what ran
        before it in the process."""
        exponents = torch.arange(0, dim, 2, device=device).float() / dim
        inv_freq = 1.0 / (self.rope.base_frequency ** exponents)
        positions = torch.arange(self.max_position, device=device, dtype=inv_freq.dtype)
        angles = torch.einsum("i,j->ij", positions, inv_freq).to(dtype)
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos().to(dtype), angles.sin().to(dtype)

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        dim = tokens.size(-1) // 2
        cos, sin = self.tables(dim, tokens.device, tokens.dtype)
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


class DA3MonoBackbone(nn.Module):
    """Depth Anything 3's DinoV2 backbone for one view (S = 1), restated with two swappable parts; bit-identical to the
    package's ``get_intermediate_layers`` (the same modules, the same ops in the same order: with one view its
    rearranges are no-ops and global attention is attention over the view's tokens with the global RoPE positions).

    ``pretrained`` is the package's ViT itself (blocks, norm, RoPE, tokens: the other da3_* rewrites keep walking it).
    ``tokens``: None = the package's ``prepare_tokens_with_masks`` (position embedding resized at run time), or
    :class:`DA3FrozenTokens` (``da3_freeze_position_embedding``).  ``camera``: None = the package's index assignment
    ``x[:, :, 0] = cam_token`` (a SELECT_V2 in LiteRT), or :class:`DA3ConcatCameraToken` (``da3_concat_camera_token``).
    """

    def __init__(self, dinov2: nn.Module):
        super().__init__()
        self.pretrained = dinov2.pretrained
        self.out_layers = list(dinov2.out_layers)
        self.tokens: nn.Module | None = None
        self.camera: nn.Module | None = None
        self.positions: nn.Module | None = None     # None: the package's _prepare_rope; DA3StaticPositions

    @classmethod
    def of(cls, model: nn.Module) -> "DA3MonoBackbone":
        """``model.backbone`` as a DA3MonoBackbone, installed in place first if it is still the package's DinoV2
        (callers pass their own deep copy)."""
        if not isinstance(model.backbone, cls):
            model.backbone = cls(model.backbone)
        return model.backbone

    def forward(self, x: torch.Tensor, cam_token=None, export_feat_layers=(), **kwargs):
        vit = self.pretrained
        b, s, _, h, w = x.shape
        if s != 1 or cam_token is not None or export_feat_layers or kwargs.get("attn_mask") is not None:
            raise ValueError("DA3MonoBackbone runs one view without camera conditions (the monocular model)")
        t = vit.prepare_tokens_with_masks(x)[:, 0] if self.tokens is None else self.tokens(x[:, 0])   # [B, 1+N, C]
        pos, pos_global = vit._prepare_rope(b, 1, h, w, x.device) if self.positions is None else self.positions(b)
        if pos is not None:
            pos, pos_global = pos[:, 0], pos_global[:, 0]
        outs, local = [], t
        for i, blk in enumerate(vit.blocks):
            is_global = vit.alt_start != -1 and i >= vit.alt_start and i % 2 == 1
            p = None if i < vit.rope_start or vit.rope is None else (pos_global if is_global else pos)
            if vit.alt_start != -1 and i == vit.alt_start:
                if self.camera is None:                                   # the package's own statement
                    t[:, 0] = vit.camera_token[:, :1].expand(b, -1, -1)[:, 0]
                else:
                    t = self.camera(t)
            t = blk(t, pos=p, attn_mask=None)
            if not is_global:
                local = t
            if i in self.out_layers:
                outs.append(torch.cat([local, t], dim=-1) if vit.cat_token else t)
        cams = [o[:, None, 0] for o in outs]                              # [B, 1, C']: the package's camera tokens
        c = vit.embed_dim
        if outs[0].shape[-1] == c:
            outs = [vit.norm(o) for o in outs]
        else:
            outs = [torch.cat([o[..., :c], vit.norm(o[..., c:])], dim=-1) for o in outs]
        outs = [o[:, None, 1 + vit.num_register_tokens:] for o in outs]   # [B, S=1, N, C']
        return tuple(zip(outs, cams)), []


class DA3StaticPositions(nn.Module):
    """The RoPE positions (local grid and global, [1, 1, N, 2] as ``_prepare_rope`` returns them for one view) for one
    input size as int64 constants (``da3_static_positions``): the package's own values, computed once instead of from
    ``zeros(...).to(int64)`` at run time."""

    def __init__(self, local: torch.Tensor, global_: torch.Tensor):
        super().__init__()
        self.register_buffer("local", local[:1].detach().clone())
        self.register_buffer("global_", global_[:1].detach().clone())

    def forward(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.local.expand(batch, *self.local.shape[1:]), self.global_.expand(batch, *self.global_.shape[1:])


class DA3ConcatCameraToken(nn.Module):
    """Token 0 replaced by the reference view's camera token, by concatenation (``da3_concat_camera_token``): the same
    values as the package's ``x[:, :, 0] = cam_token``, without LiteRT's SELECT_V2 (which the GPU delegate rejects)."""

    def __init__(self, camera_token: torch.Tensor):
        super().__init__()
        self.register_buffer("token", camera_token[:, :1].detach().clone())       # [1, 1, C]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat((self.token.expand(x.shape[0], -1, -1).to(x.dtype), x[:, 1:]), dim=1)


class DA3FrozenTokens(nn.Module):
    """Depth Anything 3's patch embedding + CLS token + a position embedding precomputed for one input size
    (``da3_freeze_position_embedding``): ``cat(cls, patches) + pos`` as ``cat(cls + pos[:1], patches + pos[1:])``,
    element by element the same float adds (cf. :class:`FrozenEmbeddings`)."""

    def __init__(self, patch_embed: nn.Module, cls_pos: torch.Tensor, patch_pos: torch.Tensor, height: int, width: int):
        super().__init__()
        self.patch_embed = patch_embed
        self.register_buffer("cls_pos", cls_pos.detach().clone())        # [1, 1, C]
        self.register_buffer("patch_pos", patch_pos.detach().clone())    # [1, N, C]
        self.height, self.width = height, width

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        if tuple(pixel_values.shape[2:]) != (self.height, self.width):
            raise ValueError(f"DA3FrozenTokens was frozen for {self.height}x{self.width}, "
                             f"got {tuple(pixel_values.shape)}")
        pe = self.patch_embed
        p = pe.proj(pixel_values)                                        # [B, C, h, w]
        patches = pe.norm(p.permute(0, 2, 3, 1).reshape(p.shape[0], -1, p.shape[1]))   # = flatten(2).transpose(1, 2)
        return torch.cat((self.cls_pos.expand(p.shape[0], -1, -1), patches + self.patch_pos), dim=1)


class DA3DepthHead(nn.Module):
    """DualDPT's main (depth + confidence) branch only (``da3_drop_ray_head``): the package's ``_forward_impl`` for
    those two outputs, the same modules and ops; the ray branch's fusion blocks and output convolutions are gone.
    ``uv_embeds``: the five UV position embeddings (after each of the four projections and after the upsample), each
    :class:`DA3UVEmbedding` (computed at run time, as the package) until ``da3_constant_uv_embedding`` swaps them."""

    AUX = ("refinenet1_aux", "refinenet2_aux", "refinenet3_aux", "refinenet4_aux", "output_conv1_aux",
           "output_conv2_aux")

    def __init__(self, dpt: nn.Module):
        super().__init__()
        self.patch_size, self.down_ratio = dpt.patch_size, dpt.down_ratio
        self.activation, self.conf_activation = dpt.activation, dpt.conf_activation
        self.head_main = dpt.head_main
        self.intermediate_layer_idx = tuple(dpt.intermediate_layer_idx)
        self.norm, self.projects, self.resize_layers = dpt.norm, dpt.projects, dpt.resize_layers
        self.scratch = dpt.scratch
        for name in self.AUX:
            if hasattr(self.scratch, name):
                delattr(self.scratch, name)
        self.uv_embeds = nn.ModuleList([DA3UVEmbedding() for _ in range(5)]) if dpt.pos_embed else None

    def forward(self, feats, H: int, W: int, patch_start_idx: int, chunk_size: int = 8) -> dict:
        b, s, n, c = feats[0][0].shape
        feats = [f[0].reshape(b * s, n, c) for f in feats]
        ph, pw = H // self.patch_size, W // self.patch_size
        resized = []
        for stage, take in enumerate(self.intermediate_layer_idx):
            x = self.norm(feats[take][:, patch_start_idx:])
            x = self.projects[stage](x.permute(0, 2, 1).reshape(b * s, c, ph, pw))
            if self.uv_embeds is not None:
                x = self.uv_embeds[stage](x, W, H)
            resized.append(self.resize_layers[stage](x))
        sc = self.scratch
        l1, l2, l3, l4 = (rn(r) for rn, r in zip((sc.layer1_rn, sc.layer2_rn, sc.layer3_rn, sc.layer4_rn), resized))
        out = sc.refinenet4(l4, size=l3.shape[2:])
        out = sc.refinenet3(out, l3, size=l2.shape[2:])
        out = sc.refinenet2(out, l2, size=l1.shape[2:])
        out = sc.output_conv1(sc.refinenet1(out, l1))
        h_out, w_out = int(ph * self.patch_size / self.down_ratio), int(pw * self.patch_size / self.down_ratio)
        from depth_anything_3.model.dualdpt import DualDPT
        from depth_anything_3.model.utils.head_utils import custom_interpolate

        out = custom_interpolate(out, (h_out, w_out), mode="bilinear", align_corners=True)
        if self.uv_embeds is not None:
            out = self.uv_embeds[4](out, W, H)
        fmap = sc.output_conv2(out).permute(0, 2, 3, 1)
        activate = DualDPT._apply_activation_single        # reads only its arguments
        depth = activate(self, fmap[..., :-1], self.activation).squeeze(-1)
        conf = activate(self, fmap[..., -1], self.conf_activation)
        return {self.head_main: depth.reshape(b, s, *depth.shape[1:]),
                f"{self.head_main}_conf": conf.reshape(b, s, *conf.shape[1:])}


class DA3UVEmbedding(nn.Module):
    """DualDPT's ``_add_pos_embed`` (ratio 0.1): a sin/cos embedding of a normalised UV grid of the feature map's size,
    added to it; computed at run time with the package's functions (meshgrid: BROADCAST_TO in LiteRT)."""

    ratio = 0.1

    def forward(self, x: torch.Tensor, W: int, H: int) -> torch.Tensor:
        from depth_anything_3.model.utils.head_utils import create_uv_grid, position_grid_to_embed

        pw, ph = x.shape[-1], x.shape[-2]
        pe = create_uv_grid(pw, ph, aspect_ratio=W / H, dtype=x.dtype, device=x.device)
        pe = position_grid_to_embed(pe, x.shape[1]) * self.ratio
        return x + pe.permute(2, 0, 1)[None].expand(x.shape[0], -1, -1, -1)


class DA3SeparableUVEmbedding(nn.Module):
    """:class:`DA3UVEmbedding` for one feature-map size as two constants (``da3_constant_uv_embedding``): the first
    C/2 channels of the embedding depend only on the column, the last C/2 only on the row, so it is
    ``cat(x[:, :C/2] + u, x[:, C/2:] + v)`` with ``u`` [1, C/2, 1, w] and ``v`` [1, C/2, h, 1]: the same one add per
    element (bit-identical), C/2*(h+w) values stored instead of C*h*w, no meshgrid/sin/cos in the graph, and the
    runtime tensor first at full rank in both ADDs (no GPU hazard).  Not ``x + u' + v'`` with zero-padded
    [1, C, 1, w] / [1, C, h, 1] constants: the converter folds ``u' + v'`` into one full [1, h, w, C] constant
    (34 MB for the final map of DA3-Small at 518x518, measured)."""

    def __init__(self, u: torch.Tensor, v: torch.Tensor, W: int, H: int):
        super().__init__()
        self.register_buffer("u", u.detach().clone())        # [1, C/2, 1, w]
        self.register_buffer("v", v.detach().clone())        # [1, C/2, h, 1]
        self.size = (int(H), int(W))

    def forward(self, x: torch.Tensor, W: int, H: int) -> torch.Tensor:
        if (H, W) != self.size or tuple(x.shape[-2:]) != (self.v.shape[-2], self.u.shape[-1]):
            raise ValueError(f"UV embedding frozen for {self.size[0]}x{self.size[1]}, got {H}x{W} / {tuple(x.shape)}")
        half = self.u.shape[1]
        return torch.cat((x[:, :half] + self.u, x[:, half:] + self.v), dim=1)
