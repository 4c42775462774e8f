# ch10 exercise 6: CPU estimate of bench_cuda's max relative error under TF32.
# Emulates what CUBLAS_TF32_TENSOR_OP_MATH does to bench_cuda's max_rel_err (inputs rounded to TF32, FP32 accumulate).
import torch, time
torch.manual_seed(0)
def tf32(x):  # round-to-nearest-even to 10 explicit mantissa bits (TF32), kept in a float32
    i = x.view(torch.int32)
    lsb = (i >> 13) & 1
    return ((i + 0x0FFF + lsb) & ~0x1FFF).view(torch.float32)
for n in (1024, 2048):
    A = torch.rand(n, n) * 2 - 1; B = torch.rand(n, n) * 2 - 1
    t = time.time()
    ref = A.double() @ B.double()
    c32 = A @ B
    ct = tf32(A) @ tf32(B)
    rel = lambda c, r: ((c.double() - r.double()).abs().max() / r.double().abs().max()).item()
    print(f"n={n}: FP32 vs exact {rel(c32, ref):.1e} | FP32 kernel vs a TF32 'cuBLAS' (the bench's max_rel_err) {rel(c32, ct):.1e} | TF32 vs exact {rel(ct, ref):.1e}  ({time.time()-t:.1f}s)")
