"""Monocular DA3 wrapper: pixel_values [1,3,H,W] (ImageNet-normalised) -> (depth [1,H,W], conf [1,H,W])."""
import torch, torch.nn as nn

class DA3MonoPlain(nn.Module):
    """Calls the package's own backbone + head code unchanged (only drops cam_enc/cam_dec/gs)."""
    def __init__(self, net):
        super().__init__()
        self.backbone = net.backbone          # DinoV2 wrapper
        self.head = net.head                  # DualDPT
    def forward(self, pixel_values):
        H, W = pixel_values.shape[-2:]
        x = pixel_values[:, None]             # [B, S=1, 3, H, W]
        feats, _ = self.backbone(x, cam_token=None, export_feat_layers=[])
        out = self.head(feats, H, W, patch_start_idx=0)
        return out["depth"][:, 0], out["depth_conf"][:, 0]

def make(variant, net, H, W):
    if variant == "plain":
        return DA3MonoPlain(net)
    return VARIANTS[variant](net, H, W)

VARIANTS = {}

# ---------------------------------------------------------------------------------------------
# "minfix": the smallest change that lets torch.export trace the package code: RoPE's
# `max_position = int(positions.max()) + 1` (rope.py:183, data-dependent) replaced by a Python int
# known from the static input size. Everything else is the package's own code.
from depth_anything_3.model.dinov2.layers.rope import RotaryPositionEmbedding2D

class StaticMaxRope(RotaryPositionEmbedding2D):
    def __init__(self, frequency, max_position):
        super().__init__(frequency=frequency)
        self.max_position = max_position
    def forward(self, tokens, positions):
        feature_dim = tokens.size(-1) // 2
        cos_comp, sin_comp = self._compute_frequency_components(
            feature_dim, self.max_position, tokens.device, tokens.dtype)
        v, h = tokens.chunk(2, dim=-1)
        v = self._apply_1d_rope(v, positions[..., 0], cos_comp, sin_comp)
        h = self._apply_1d_rope(h, positions[..., 1], cos_comp, sin_comp)
        return torch.cat((v, h), dim=-1)

def _swap_rope(vit, H, W):
    old = vit.rope
    new = StaticMaxRope(old.base_frequency, max(H // 14, W // 14) + 1)  # patch positions are 1..ph (pos+1)
    vit.rope = new
    for blk in vit.blocks:
        if blk.attn.rope is not None:
            blk.attn.rope = new
    return vit

def minfix(net, H, W):
    import copy
    net = copy.deepcopy(net)
    _swap_rope(net.backbone.pretrained, H, W)
    return DA3MonoPlain(net)

VARIANTS["minfix"] = minfix

# ---------------------------------------------------------------------------------------------
# "gpufix": monocular re-statement of the same maths for a static size, written to avoid the ops
# LiteRT's GPU delegate refuses. Reuses the package's modules/weights (patch_embed, Block's norms/MLP/
# LayerScale, qkv/proj Linear, q_norm/k_norm, DualDPT convs/fusion blocks); changes only:
#  * attention: rank-4 [1,h,N,d] q/k/v by slicing the qkv output (no 5-D reshape/permute), eager softmax
#  * RoPE: cos/sin tables for the fixed grid precomputed with the package's own functions -> constants
#  * camera token: concat instead of `x[:, :, 0] = cam_token` (SELECT_V2)
#  * ViT pos-embed: the package's interpolate_pos_encoding evaluated once -> constant
#  * DualDPT UV pos-embeds: the package's _add_pos_embed evaluated once per stage -> constants
#  * head: only the main (depth) branch; no ray/aux branch, no camera decoder/encoder
import torch.nn.functional as F

class GPUAttention(nn.Module):
    def __init__(self, attn, cos=None, sin=None):
        super().__init__()
        self.h = attn.num_heads
        self.qkv, self.proj, self.q_norm, self.k_norm = attn.qkv, attn.proj, attn.q_norm, attn.k_norm
        self.scale = attn.scale
        if cos is not None:
            self.register_buffer("cos", cos[None, None])   # [1,1,N,d]
            self.register_buffer("sin", sin[None, None])
        else:
            self.cos = None
    @staticmethod
    def _rot(t):  # package rotation applied per half (vertical | horizontal), each cat(-x2, x1)
        d = t.shape[-1]; q = d // 4
        return torch.cat((-t[..., q:2 * q], t[..., :q], -t[..., 3 * q:], t[..., 2 * q:3 * q]), dim=-1)
    def forward(self, x, pos=None, attn_mask=None):
        B, N, C = x.shape
        d = C // self.h
        qkv = self.qkv(x)
        def heads(t):
            return t.reshape(B, N, self.h, d).permute(0, 2, 1, 3)
        q, k, v = heads(qkv[..., :C]), heads(qkv[..., C:2 * C]), heads(qkv[..., 2 * C:])
        q, k = self.q_norm(q), self.k_norm(k)
        if self.cos is not None:
            q = q * self.cos + self._rot(q) * self.sin
            k = k * self.cos + self._rot(k) * self.sin
        a = torch.softmax((q * self.scale) @ k.transpose(-2, -1), dim=-1)
        o = (a @ v).permute(0, 2, 1, 3).reshape(B, N, C)
        return self.proj(o)

class DA3MonoGPU(nn.Module):
    def __init__(self, net, H, W):
        super().__init__()
        import copy
        net = copy.deepcopy(net)
        vit, head = net.backbone.pretrained, net.head
        self.H, self.W, ps = H, W, vit.patch_size
        ph, pw = H // ps, W // ps
        self.ph, self.pw = ph, pw
        self.patch_embed, self.norm = vit.patch_embed, vit.norm
        self.out_layers = list(net.backbone.out_layers)
        self.alt_start, self.rope_start = vit.alt_start, vit.rope_start
        self.register_buffer("cls_pos", None)
        with torch.no_grad():
            dummy = torch.zeros(1, ph * pw + 1, vit.embed_dim)
            pos = vit.interpolate_pos_encoding(dummy, H, W)                 # [1, N+1, C] (package fn, names w=H,h=W)
            self.register_buffer("pos_embed", pos.detach().clone())
            self.register_buffer("cls_token", vit.cls_token.detach().clone())
            self.register_buffer("cam_token", vit.camera_token[:, :1].detach().clone())  # reference-view token (S=1)
            # RoPE tables exactly as the package builds them
            p_local, p_global = vit._prepare_rope(1, 1, H, W, "cpu")       # [1,1,N+1,2]
            rope = vit.rope
            d = vit.embed_dim // vit.num_heads
            def table(p):
                p = p[0, 0]
                cc, ss = rope._compute_frequency_components(d // 2, int(p.max()) + 1, torch.device("cpu"), torch.float32)
                cos = torch.cat((F.embedding(p[:, 0], cc), F.embedding(p[:, 1], cc)), -1)
                sin = torch.cat((F.embedding(p[:, 0], ss), F.embedding(p[:, 1], ss)), -1)
                return cos, sin
            tl, tg = table(p_local), table(p_global)
        for i, blk in enumerate(vit.blocks):
            if vit.rope is None or i < vit.rope_start or blk.attn.rope is None:
                cs = (None, None)
            elif vit.alt_start != -1 and i >= vit.alt_start and i % 2 == 1:
                cs = tg
            else:
                cs = tl
            blk.attn = GPUAttention(blk.attn, *cs)
        self.blocks = vit.blocks
        self.head = head
        # DualDPT constant UV position embeddings (package's _add_pos_embed on zeros)
        with torch.no_grad():
            self.pes = nn.ParameterList()
            for st in range(4):
                C = head.projects[st].out_channels
                pe = head._add_pos_embed(torch.zeros(1, C, ph, pw), W, H)
                self.pes.append(nn.Parameter(pe, requires_grad=False))
            h_out = int(ph * head.patch_size / head.down_ratio); w_out = int(pw * head.patch_size / head.down_ratio)
            self.out_hw = (h_out, w_out)
            C = head.scratch.output_conv1.out_channels
            self.pe_final = nn.Parameter(head._add_pos_embed(torch.zeros(1, C, h_out, w_out), W, H), requires_grad=False)

    def forward(self, pixel_values):
        x = self.patch_embed(pixel_values)                                  # [1, N, C]
        x = torch.cat((self.cls_token, x), dim=1) + self.pos_embed
        feats, local_x = [], x
        for i, blk in enumerate(self.blocks):
            if self.alt_start != -1 and i == self.alt_start:
                x = torch.cat((self.cam_token, x[:, 1:]), dim=1)
            x = blk(x)
            is_global = self.alt_start != -1 and i >= self.alt_start and i % 2 == 1
            if not is_global:
                local_x = x
            if i in self.out_layers:
                feats.append(torch.cat((local_x, self.norm(x)), dim=-1)[:, 1:])   # cat_token, drop cam/cls token
        hd = self.head
        rs = []
        for st in range(4):
            t = hd.norm(feats[st])
            t = t.permute(0, 2, 1).reshape(1, t.shape[-1], self.ph, self.pw)
            t = hd.projects[st](t) + self.pes[st]
            rs.append(hd.resize_layers[st](t))
        sc = hd.scratch
        l1, l2, l3, l4 = sc.layer1_rn(rs[0]), sc.layer2_rn(rs[1]), sc.layer3_rn(rs[2]), sc.layer4_rn(rs[3])
        out = sc.refinenet4(l4, size=l3.shape[2:])
        out = sc.refinenet3(out, l3, size=l2.shape[2:])
        out = sc.refinenet2(out, l2, size=l1.shape[2:])
        out = sc.refinenet1(out, l1)
        out = sc.output_conv1(out)
        out = F.interpolate(out, size=self.out_hw, mode="bilinear", align_corners=True) + self.pe_final
        logits = sc.output_conv2(out)                                        # [1, 2, H, W]
        return torch.exp(logits[:, 0]), torch.exp(logits[:, 1]) + 1          # DualDPT activation="exp", conf "expp1"

VARIANTS["gpufix"] = DA3MonoGPU

class GPUTrunc(nn.Module):
    """Bisect helper: DA3MonoGPU up to block k (returns tokens [1,N,C]) or the head's input features."""
    def __init__(self, net, H, W, k):
        super().__init__()
        self.m = DA3MonoGPU(net, H, W); self.k = k
    def forward(self, pixel_values):
        m = self.m
        x = m.patch_embed(pixel_values)
        x = torch.cat((m.cls_token, x), dim=1) + m.pos_embed
        for i, blk in enumerate(m.blocks[: self.k]):
            if m.alt_start != -1 and i == m.alt_start:
                x = torch.cat((m.cam_token, x[:, 1:]), dim=1)
            x = blk(x)
        return (x,)
for _k in (0, 1, 4, 5, 12):
    VARIANTS[f"trunc{_k}"] = (lambda k: (lambda net, H, W: GPUTrunc(net, H, W, k)))(_k)

class GPUAttention2(GPUAttention):
    """Same maths, edgedepth's EdgeAttention layout: qkv -> [N, 3h, d] -> transpose -> [3h, N, d] -> rank-4 per tensor."""
    def forward(self, x, pos=None, attn_mask=None):
        B, N, C = x.shape
        h = self.h; d = C // h
        qkv = self.qkv(x).reshape(N, 3 * h, d).transpose(0, 1)          # [3h, N, d]
        q, k, v = (t.reshape(1, h, N, d) for t in (qkv[:h], qkv[h:2 * h], qkv[2 * h:]))
        q, k = self.q_norm(q), self.k_norm(k)
        if self.cos is not None:
            q = q * self.cos + self._rot(q) * self.sin
            k = k * self.cos + self._rot(k) * self.sin
        a = torch.softmax(torch.matmul(q * self.scale, k.transpose(2, 3)), dim=-1)
        o = torch.matmul(a, v).reshape(h, N, d)
        return self.proj(o.transpose(0, 1).reshape(1, N, C))

def _gpufix2(net, H, W, trunc=None):
    m = DA3MonoGPU(net, H, W)
    for blk in m.blocks:
        a = blk.attn; a.__class__ = GPUAttention2
    if trunc is None:
        return m
    t = GPUTrunc.__new__(GPUTrunc); nn.Module.__init__(t); t.m = m; t.k = trunc
    return t
VARIANTS["gpufix2"] = _gpufix2
VARIANTS["trunc1b"] = lambda net, H, W: _gpufix2(net, H, W, 1)

class KeepDimsLN(nn.Module):
    """LayerNorm with keep-dims means (same maths as nn.LayerNorm)."""
    def __init__(self, ln):
        super().__init__(); self.weight, self.bias, self.eps = ln.weight, ln.bias, ln.eps
    def forward(self, x):
        m = x.mean(-1, keepdim=True); c = x - m
        return c * torch.rsqrt((c * c).mean(-1, keepdim=True) + self.eps) * self.weight + self.bias

def _swap_ln(mod):
    for name, ch in list(mod.named_children()):
        if isinstance(ch, nn.LayerNorm): setattr(mod, name, KeepDimsLN(ch))
        else: _swap_ln(ch)
    return mod
VARIANTS["gpufix_ln"] = lambda net, H, W: _swap_ln(DA3MonoGPU(net, H, W))
VARIANTS["trunc1_ln"] = lambda net, H, W: _swap_ln(GPUTrunc(net, H, W, 1))
