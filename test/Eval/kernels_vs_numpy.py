"""The reference evaluator against independent NumPy formulations of each
op's semantics (PyTorch's conventions: NCHW/OIHW, biased batch variance,
count_include_pad=False, first maximum wins). The evaluator is the golden
reference for everything else, so its kernels are checked from outside."""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

rng = np.random.default_rng(0)
CASES = []


def case(name, signature, body, result_type, inputs, expected):
    CASES.append((name, signature, body, result_type, inputs, expected))


def t(shape, dtype="f64"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def conv2d_ref(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg,
                           i * stride[0]:i * stride[0] + dil[0] * (kh - 1) + 1:dil[0],
                           j * stride[1]:j * stride[1] + dil[1] * (kw - 1) + 1:dil[1]]
                y[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3)) + b[oc]
    return y


def pool_ref(x, k, s, p, kind):
    n, c, h, w = x.shape
    oh, ow = (h + 2 * p[0] - k[0]) // s[0] + 1, (w + 2 * p[1] - k[1]) // s[1] + 1
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s[0] - p[0], j * s[1] - p[1]
            win = x[:, :, max(r0, 0):min(r0 + k[0], h), max(c0, 0):min(c0 + k[1], w)]
            y[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
    return y


x = rng.standard_normal((2, 4, 7, 6)); w = rng.standard_normal((6, 2, 3, 2)); b = rng.standard_normal(6)
case("conv2d", f"%x: {t(x.shape)}, %w: {t(w.shape)}, %b: {t(b.shape)}",
     f"%y = het.conv2d %x, %w, %b {{strides = array<i64: 2, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 2>, groups = 2 : i64}} : {t(x.shape)}, {t(w.shape)}, {t(b.shape)} -> {t((2, 6, 4, 6))}",
     t((2, 6, 4, 6)), [x, w, b], conv2d_ref(x, w, b, (2, 1), (1, 1), (1, 2), 2))
p = rng.standard_normal((2, 3, 5, 5))
for kind in ("max", "avg"):
    case(f"{kind}_pool", f"%x: {t(p.shape)}",
         f"%y = het.{kind}_pool2d %x {{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>}} : {t(p.shape)} -> {t((2, 3, 3, 3))}",
         t((2, 3, 3, 3)), [p], pool_ref(p, (3, 3), (2, 2), (1, 1), kind))
bn = rng.standard_normal((4, 3, 2, 2)); g = rng.standard_normal(3); be = rng.standard_normal(3)
mu = bn.mean(axis=(0, 2, 3), keepdims=True); var = bn.var(axis=(0, 2, 3), keepdims=True)
bn_ref = (bn - mu) / np.sqrt(var + 1e-5) * g[None, :, None, None] + be[None, :, None, None]
case("batch_norm", f"%x: {t(bn.shape)}, %g: {t((3,))}, %b: {t((3,))}",
     f"%y, %m, %s = het.batch_norm %x, %g, %b : {t(bn.shape)}, {t((3,))}, {t((3,))} -> {t(bn.shape)}, {t((3,))}, {t((3,))}",
     t(bn.shape), [bn, g, be], bn_ref)
case("batch_norm_relu", f"%x: {t(bn.shape)}, %g: {t((3,))}, %b: {t((3,))}",
     f"%y, %m, %s = het.batch_norm_relu %x, %g, %b : {t(bn.shape)}, {t((3,))}, {t((3,))} -> {t(bn.shape)}, {t((3,))}, {t((3,))}",
     t(bn.shape), [bn, g, be], np.maximum(bn_ref, 0))
# Running statistics as torch.nn.BatchNorm2d keeps them: blended by momentum,
# the variance unbiased over the values per channel (N*H*W, or samples*H*W).
rm0 = rng.standard_normal(3); rv0 = rng.random(3) + 0.5
for name, attrs, per_channel, result in (
        ("running_mean", "{momentum = 0.3 : f64}", 16, "%nm"),
        ("running_var", "{momentum = 0.3 : f64}", 16, "%nv"),
        ("running_var_samples", "{momentum = 0.3 : f64, samples = 8 : i64}", 32, "%nv")):
    ref = 0.7 * rm0 + 0.3 * mu.ravel() if result == "%nm" else \
        0.7 * rv0 + 0.3 * var.ravel() * per_channel / (per_channel - 1)
    case(name, f"%x: {t(bn.shape)}, %g: {t((3,))}, %b: {t((3,))}, %rm: {t((3,))}, %rv: {t((3,))}",
         f"%n, %m, %s = het.batch_norm %x, %g, %b : {t(bn.shape)}, {t((3,))}, {t((3,))} -> {t(bn.shape)}, {t((3,))}, {t((3,))}\n"
         f"  %nm, %nv = het.batch_norm_running_stats %rm, %rv, %m, %s, %x {attrs} : {t((3,))}, {t((3,))}, {t((3,))}, {t((3,))}, {t(bn.shape)} -> {t((3,))}, {t((3,))}\n"
         f"  %y = het.reshape {result} : {t((3,))} -> {t((3,))}",
         t((3,)), [bn, g, be, rm0, rv0], ref)
ln = rng.standard_normal((2, 3, 6)); lg = rng.standard_normal(6); lb = rng.standard_normal(6)
ln_ref = (ln - ln.mean(-1, keepdims=True)) / np.sqrt(ln.var(-1, keepdims=True) + 1e-5) * lg + lb
case("layer_norm", f"%x: {t(ln.shape)}, %g: {t((6,))}, %b: {t((6,))}",
     f"%y, %m, %s = het.layer_norm %x, %g, %b : {t(ln.shape)}, {t((6,))}, {t((6,))} -> {t(ln.shape)}, {t((2, 3))}, {t((2, 3))}",
     t(ln.shape), [ln, lg, lb], ln_ref)
# RMS norm, and its gradient from the chain rule through r = (mean(x^2) + eps)^-1/2
# (dr/dx = -r^3 x / D), not the kernel's xhat form.
rx = rng.standard_normal((2, 3, 6)); rw = rng.standard_normal(6); rdy = rng.standard_normal((2, 3, 6))
rr = 1 / np.sqrt((rx * rx).mean(-1, keepdims=True) + 1e-6)
rg = rdy * rw
rms_sig = f"%dy: {t(rx.shape)}, %x: {t(rx.shape)}, %w: {t((6,))}, %r: {t((2, 3))}"
rms_types = f"{t(rx.shape)}, {t(rx.shape)}, {t((6,))}, {t((2, 3))} -> {t(rx.shape)}, {t((6,))}"
case("rms_norm", f"%x: {t(rx.shape)}, %w: {t((6,))}",
     f"%y, %r = het.rms_norm %x, %w : {t(rx.shape)}, {t((6,))} -> {t(rx.shape)}, {t((2, 3))}",
     t(rx.shape), [rx, rw], rx * rr * rw)
case("rms_norm_grad_input", rms_sig,
     f"%y, %dw = het.rms_norm_grad %dy, %x, %w, %r : {rms_types}",
     t(rx.shape), [rdy, rx, rw, rr[..., 0]],
     rr * rg - rr ** 3 * rx * (rg * rx).sum(-1, keepdims=True) / 6)
case("rms_norm_grad_scale", rms_sig,
     f"%dx, %y = het.rms_norm_grad %dy, %x, %w, %r : {rms_types}",
     t((6,)), [rdy, rx, rw, rr[..., 0]], (rdy * rx * rr).sum(axis=(0, 1)))
sm = rng.standard_normal((2, 3, 5))  # 3 queries, 5 keys: query i sees keys j <= i + 2
mask = np.array([[j <= i + 2 for j in range(5)] for i in range(3)])
logits = np.where(mask, 0.7 * sm, -np.inf)
e = np.exp(logits - logits.max(-1, keepdims=True))
case("softmax_causal", f"%x: {t(sm.shape)}", f"%y = het.softmax %x {{causal, scale = 0.7 : f64}} : {t(sm.shape)}",
     t(sm.shape), [sm], e / e.sum(-1, keepdims=True))
ce = rng.standard_normal((6, 5)); labels = rng.integers(0, 5, 6)
lse = np.log(np.exp(ce).sum(-1))
case("cross_entropy", f"%x: {t(ce.shape)}, %l: tensor<6xi64>",
     f"%y = het.cross_entropy %x, %l : {t(ce.shape)}, tensor<6xi64> -> tensor<f64>", "tensor<f64>",
     [ce, labels], np.array((lse - ce[np.arange(6), labels]).mean()))
ge = rng.standard_normal((3, 4))
erf = np.vectorize(math.erf)
case("gelu", f"%x: {t(ge.shape)}", f"%y = het.gelu %x : {t(ge.shape)}", t(ge.shape), [ge], 0.5 * ge * (1 + erf(ge / math.sqrt(2))))
case("gelu_tanh", f"%x: {t(ge.shape)}", f"%y = het.gelu %x {{approximate = #het.gelu_approximation<tanh>}} : {t(ge.shape)}",
     t(ge.shape), [ge], 0.5 * ge * (1 + np.tanh(math.sqrt(2 / math.pi) * (ge + 0.044715 * ge ** 3))))
a = rng.standard_normal((2, 5, 3)); bm = rng.standard_normal((4, 5))
case("matmul", f"%a: {t(a.shape)}, %b: {t(bm.shape)}",
     f"%y = het.matmul %a, %b {{transpose_lhs, transpose_rhs}} : {t(a.shape)}, {t(bm.shape)} -> {t((2, 3, 4))}",
     t((2, 3, 4)), [a, bm], np.swapaxes(a, -1, -2) @ bm.T)
lx = rng.standard_normal((3, 5)); lw = rng.standard_normal((4, 5)); lbias = rng.standard_normal(4)
case("linear_relu", f"%x: {t(lx.shape)}, %w: {t(lw.shape)}, %b: {t((4,))}",
     f"%y = het.linear %x, %w, %b {{activation = #het.activation<relu>}} : {t(lx.shape)}, {t(lw.shape)}, {t((4,))} -> {t((3, 4))}",
     t((3, 4)), [lx, lw, lbias], np.maximum(lx @ lw.T + lbias, 0))
table = rng.standard_normal((7, 3)); idx = rng.integers(0, 7, (2, 4))
case("embedding", f"%t: {t(table.shape)}, %i: tensor<2x4xi64>",
     f"%y = het.embedding %t, %i : {t(table.shape)}, tensor<2x4xi64> -> {t((2, 4, 3))}", t((2, 4, 3)), [table, idx], table[idx])
tr = rng.standard_normal((2, 3, 4))
case("transpose", f"%x: {t(tr.shape)}", f"%y = het.transpose %x {{permutation = array<i64: 2, 0, 1>}} : {t(tr.shape)} -> {t((4, 2, 3))}",
     t((4, 2, 3)), [tr], tr.transpose(2, 0, 1))
case("reduce_mean", f"%x: {t(tr.shape)}", f"%y = het.reduce_mean %x {{axes = array<i64: 0, 2>}} : {t(tr.shape)} -> {t((3,))}",
     t((3,)), [tr], tr.mean(axis=(0, 2)))
case("sum_to_shape", f"%x: {t(tr.shape)}", f"%y = het.sum_to_shape %x : {t(tr.shape)} -> {t((3, 1))}",
     t((3, 1)), [tr], tr.sum(axis=(0, 2))[:, None])
bx = rng.standard_normal((3, 1)); by = rng.standard_normal(4)
case("sub_broadcast", f"%a: {t(bx.shape)}, %b: {t(by.shape)}", f"%y = het.sub %a, %b : {t(bx.shape)}, {t(by.shape)} -> {t((3, 4))}",
     t((3, 4)), [bx, by], bx - by)
pr = rng.standard_normal((4, 3)); gr = rng.standard_normal((4, 3)); buf = rng.standard_normal((4, 3))
gp = gr + 0.01 * pr; nb = 0.9 * buf + gp
case("sgd_nesterov", f"%p: {t(pr.shape)}, %g: {t(pr.shape)}, %m: {t(pr.shape)}",
     f"%y, %nb = het.sgd %p, %g, %m {{lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 0.01 : f64, nesterov}} : {t(pr.shape)}",
     t(pr.shape), [pr, gr, buf], pr - 0.1 * (gp + 0.9 * nb))
m0 = rng.standard_normal((4, 3)); v0 = rng.random((4, 3)); step = np.array(3)
m1 = 0.9 * m0 + 0.1 * gr; v1 = 0.999 * v0 + 0.001 * gr * gr
adam_ref = pr * (1 - 1e-3 * 0.1) - 1e-3 / (1 - 0.9 ** 3) * m1 / (np.sqrt(v1) / math.sqrt(1 - 0.999 ** 3) + 1e-8)
case("adamw", f"%p: {t(pr.shape)}, %g: {t(pr.shape)}, %m: {t(pr.shape)}, %v: {t(pr.shape)}, %s: tensor<i64>",
     f"%y, %nm, %nv = het.adam %p, %g, %m, %v, %s {{lr = 1.0e-3 : f64, weight_decay = 0.1 : f64, decoupled}} : {t(pr.shape)}, tensor<i64>",
     t(pr.shape), [pr, gr, m0, v0, step], adam_ref)


def main():
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name, signature, body, result_type, inputs, expected in CASES:
            src = os.path.join(tmp, f"{name}.mlir")
            with open(src, "w") as f:
                f.write(f"func.func @{name}({signature}) -> {result_type} {{\n  {body}\n  return %y : {result_type}\n}}\n")
            feed = os.path.join(tmp, f"{name}.in.npz")
            np.savez(feed, **{f"arg{i}": v for i, v in enumerate(inputs)})
            out = os.path.join(tmp, f"{name}.out.npz")
            done = subprocess.run(["het-eval", src, "--inputs", feed, "--precision", "f64", "-o", out],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"{name}: het-eval failed:\n{done.stderr}")
            got = np.load(out)["result0"]
            if got.shape != np.shape(expected):
                sys.exit(f"{name}: shape {got.shape}, expected {np.shape(expected)}")
            err = np.abs(got - expected).max(initial=0) / max(np.abs(expected).max(initial=0), 1e-30)
            worst = max(worst, err)
            status = "ok" if err <= 1e-12 else "MISMATCH"
            print(f"{name}: max relative difference {err:.2e} {status}")
            if err > 1e-12:
                sys.exit(1)
    print(f"{len(CASES)} ops match NumPy (worst {worst:.2e})")


if __name__ == "__main__":
    main()
