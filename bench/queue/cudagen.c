/* Plausible CUDA-like candidate sources for --fill (see fill.h, kb__bench_cuda_source).
 *
 * The text only has to look like what an LLM or a tuner hands in, so that zstd sees realistic
 * redundancy: a fixed vocabulary of CUDA idioms, identifiers and comment phrases, varied per
 * candidate in structure, names, constants and length. It is never compiled.
 */
#include "fill.h"

#include <stdarg.h>
#include <string.h>

#include "kb/error.h"

struct gen {
  uint64_t s;        /* splitmix64 state */
  struct kb_buf *b;  /* output (borrowed) */
  int rc;            /* first failure; later writes are skipped */
  int depth;         /* statement nesting */
  int vars;          /* local variables declared so far in the current kernel */
};

static uint64_t rnd(struct gen *g) {
  uint64_t z = (g->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static int below(struct gen *g, int n) { return (int)(rnd(g) % (uint64_t)n); }

#define ONE(g, list) (list)[below((g), (int)(sizeof(list) / sizeof *(list)))]

__attribute__((format(printf, 2, 3))) static void put(struct gen *g, const char *fmt, ...) {
  if (g->rc)
    return;
  va_list ap;
  va_start(ap, fmt);
  g->rc = kb_buf_vaddf(g->b, fmt, ap);
  va_end(ap);
}

static void indent(struct gen *g) {
  for (int i = 0; i <= g->depth; i++)
    put(g, "    ");
}

static const char *const families[] = {"matmul", "softmax", "layernorm", "conv2d",
                                       "reduce_sum", "gelu", "attention", "transpose"};

static const char *const intros[] = {
    "Each thread block computes", "This version uses", "Optimization:", "Changed from the parent:",
    "Idea:", "Note: we rely on", "Compared to the baseline, this kernel adds",
    "The main loop now uses", "Mutation:", "We switch to", "Key change:", "Here we try"};
static const char *const objects[] = {
    "a 2D tile of the output per block", "shared memory to stage both input tiles",
    "warp-level shuffles for the final reduction", "vectorized float4 loads and stores",
    "a grid-stride loop over the flattened tensor", "register blocking with several accumulators",
    "double buffering of the shared tiles", "manual loop unrolling of the inner product",
    "a fused bias add and activation in the epilogue", "coalesced writes through shared memory",
    "padding of the shared array to avoid bank conflicts", "an online softmax with a running max",
    "__ldg for the read-only operands", "tile sizes that map well onto tensor cores",
    "one warp per row instead of one block per row", "cooperative loading by all threads",
    "fast math intrinsics for the exponentials", "a two-pass mean and variance (Welford)",
    "precomputed reciprocal of the row length", "a persistent-block schedule"};
static const char *const reasons[] = {
    "to hide global memory latency", "so that global loads are fully coalesced",
    "which removes one __syncthreads per iteration", "to reduce register pressure",
    "because the profiler showed the kernel is memory bound", "to raise occupancy on sm_80",
    "since the previous version spilled registers", "to avoid a second pass over the input",
    "which halves the number of global transactions", "as suggested by the Nsight Compute report",
    "so each warp works on contiguous memory", "to keep the arithmetic in registers",
    "because the reduction dominated the runtime", "to cut the launch overhead of small inputs"};
static const char *const names[] = {
    "acc", "sum", "val", "tmp", "x", "y", "w", "b", "r", "c", "v", "partial", "scale", "bias",
    "mean", "var", "inv_std", "max_val", "exp_val", "gate", "norm", "alpha", "beta", "a_frag",
    "b_frag", "prod", "delta", "res", "local", "carry", "hi", "lo", "q", "kv", "logit", "m_i",
    "l_i", "row_sum", "col_max", "factor"};
static const char *const knob_names[] = {"BLOCK_SIZE", "TILE_M", "TILE_N", "TILE_K", "UNROLL",
                                         "VEC", "WARPS", "ROWS_PER_BLOCK", "THREAD_M",
                                         "THREAD_N", "STAGES", "PAD"};
static const char *const funcs1[] = {"__expf", "rsqrtf", "tanhf", "sqrtf", "fabsf", "__logf",
                                     "__frcp_rn", "__saturatef"};
static const char *const funcs2[] = {"fmaxf", "fminf", "__fdividef", "powf", "fmodf"};
static const char *const ops[] = {"+", "-", "*", "+", "*"};
static const char *const arrays[] = {"in", "w", "s_a", "s_b", "x_row", "bias", "gamma"};
static const char *const indices[] = {"idx", "tid", "row", "col", "i", "k", "lane", "offset"};

/* A comment line at file level (outside any function). */
static void sentence(struct gen *g) {
  put(g, "// %s %s %s.\n", ONE(g, intros), ONE(g, objects), ONE(g, reasons));
}

static void float_const(struct gen *g) {
  switch (below(g, 6)) {
  case 0: put(g, "0.5f"); break;
  case 1: put(g, "1.0f"); break;
  case 2: put(g, "%d.%df", below(g, 10), below(g, 1000)); break;
  case 3: put(g, "%d.0f", 2 + below(g, 30)); break;
  case 4: put(g, "1e-%df", 5 + below(g, 4)); break;
  default: put(g, "0.%04df", below(g, 10000)); break;
  }
}

static void var_name(struct gen *g) {
  if (g->vars > 0 && below(g, 3) > 0)
    put(g, "%s%d", names[below(g, 8)], below(g, g->vars < 4 ? g->vars : 4));
  else
    put(g, "%s", ONE(g, names));
}

static void expr(struct gen *g, int d) {
  if (d <= 0 || below(g, 4) == 0) {
    switch (below(g, 4)) {
    case 0: float_const(g); break;
    case 1: put(g, "%s[%s]", ONE(g, arrays), ONE(g, indices)); break;
    case 2:
      put(g, "%s[%s * %s + %s]", ONE(g, arrays), ONE(g, indices), below(g, 2) ? "k" : "TILE_K",
          ONE(g, indices));
      break;
    default: var_name(g); break;
    }
    return;
  }
  switch (below(g, 5)) {
  case 0:
    put(g, "%s(", ONE(g, funcs1));
    expr(g, d - 1);
    put(g, ")");
    break;
  case 1:
    put(g, "%s(", ONE(g, funcs2));
    expr(g, d - 1);
    put(g, ", ");
    expr(g, d - 1);
    put(g, ")");
    break;
  case 2:
    put(g, "__fmaf_rn(");
    expr(g, d - 1);
    put(g, ", ");
    expr(g, d - 1);
    put(g, ", ");
    expr(g, d - 1);
    put(g, ")");
    break;
  default:
    put(g, "(");
    expr(g, d - 1);
    put(g, " %s ", ONE(g, ops));
    expr(g, d - 1);
    put(g, ")");
    break;
  }
}

static void statement(struct gen *g);

static void block(struct gen *g, int n) {
  g->depth++;
  for (int i = 0; i < n; i++)
    statement(g);
  g->depth--;
}

static void statement(struct gen *g) {
  int kind = below(g, g->depth < 3 ? 12 : 8);
  indent(g);
  switch (kind) {
  case 0:
  case 1:
    put(g, "float %s%d = ", names[below(g, 8)], g->vars < 4 ? g->vars : below(g, 4));
    g->vars++;
    expr(g, 2 + below(g, 2));
    put(g, ";\n");
    break;
  case 2:
    var_name(g);
    put(g, " %s= ", below(g, 3) ? "+" : "*");
    expr(g, 2);
    put(g, ";\n");
    break;
  case 3:
    put(g, "__syncthreads();\n");
    break;
  case 4:
    put(g, "s_a[threadIdx.y][threadIdx.x] = (row < n && col < m) ? __ldg(&in[row * m + col])"
           " : 0.0f;\n");
    break;
  case 5:
    put(g, "// %s %s.\n", ONE(g, intros), ONE(g, objects));
    break;
  case 6:
    put(g, "for (int offset = %d; offset > 0; offset >>= 1) {\n", 16 >> below(g, 3));
    indent(g);
    put(g, "    ");
    var_name(g);
    put(g, " += __shfl_down_sync(0xffffffffu, ");
    var_name(g);
    put(g, ", offset);\n");
    indent(g);
    put(g, "}\n");
    break;
  case 7:
    put(g, "if (%s < %s) {\n", ONE(g, indices), below(g, 2) ? "n" : "m");
    indent(g);
    put(g, "    out[%s] = ", ONE(g, indices));
    expr(g, 2);
    put(g, ";\n");
    indent(g);
    put(g, "}\n");
    break;
  case 8:
  case 9: {
    const char *it = below(g, 2) ? "k" : "i";
    if (below(g, 2))
      put(g, "#pragma unroll\n"), indent(g);
    put(g, "for (int %s = %s; %s < %s; %s += %s) {\n", it, below(g, 2) ? "0" : "threadIdx.x", it,
        below(g, 2) ? "TILE_K" : "k_dim", it, below(g, 2) ? "1" : "blockDim.x");
    block(g, 1 + below(g, 4));
    indent(g);
    put(g, "}\n");
    break;
  }
  default:
    put(g, "if (%s %s %s) {\n", ONE(g, indices), below(g, 2) ? "<" : ">=", ONE(g, indices));
    block(g, 1 + below(g, 3));
    indent(g);
    put(g, "}\n");
    break;
  }
}

static void knobs(struct gen *g, const char *used[4], int *n_used) {
  int n = 1 + below(g, 4);
  *n_used = 0;
  for (int i = 0; i < n; i++) {
    const char *name = ONE(g, knob_names);
    int dup = 0;
    for (int j = 0; j < *n_used; j++)
      dup |= strcmp(used[j], name) == 0;
    if (dup)
      continue;
    used[(*n_used)++] = name;
    int base = 1 << (2 + below(g, 4));
    put(g, "// kb:param %s %d %d %d %d\n#ifndef %s\n#define %s %d\n#endif\n", name, base,
        base * 2, base * 4, base * 8, name, name, base * (1 << below(g, 4)));
  }
  put(g, "#ifndef TILE_K\n#define TILE_K %d\n#endif\n#ifndef BLOCK_X\n#define BLOCK_X %d\n#endif\n"
         "#ifndef BLOCK_Y\n#define BLOCK_Y %d\n#endif\n\n",
      8 << below(g, 3), 16 << below(g, 2), 1 << below(g, 5));
}

static void helper(struct gen *g, int id) {
  switch (below(g, 4)) {
  case 0:
    put(g, "__device__ __forceinline__ float warp_reduce_%s_%d(float v) {\n"
           "#pragma unroll\n"
           "    for (int offset = warpSize / 2; offset > 0; offset >>= 1)\n"
           "        v %s __shfl_xor_sync(0xffffffffu, v, offset);\n"
           "    return v;\n}\n\n",
        below(g, 2) ? "sum" : "max", id, below(g, 2) ? "+=" : "= fmaxf(v,");
    break;
  case 1:
    put(g, "__device__ __forceinline__ float gelu_%d(float x) {\n"
           "    // tanh approximation; %s\n"
           "    const float c = %s;\n"
           "    return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));\n}\n\n",
        id, ONE(g, reasons), below(g, 2) ? "0.7978845608f" : "sqrtf(2.0f / 3.14159265f)");
    break;
  case 2:
    put(g, "__device__ float block_reduce_%d(float v, float* shared) {\n"
           "    const int lane = threadIdx.x %% warpSize;\n"
           "    const int wid = threadIdx.x / warpSize;\n"
           "    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);\n"
           "    if (lane == 0) shared[wid] = v;\n"
           "    __syncthreads();\n"
           "    v = (threadIdx.x < blockDim.x / warpSize) ? shared[lane] : %s;\n"
           "    if (wid == 0)\n"
           "        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);\n"
           "    return v;\n}\n\n",
        id, below(g, 2) ? "0.0f" : "-INFINITY");
    break;
  default:
    put(g, "__device__ __forceinline__ float4 load4_%d(const float* __restrict__ p, int i) {\n"
           "    // %s\n"
           "    return __ldg(reinterpret_cast<const float4*>(p) + i);\n}\n\n",
        id, ONE(g, reasons));
    break;
  }
}

static void prelude(struct gen *g, int family) {
  switch (family) {
  case 0:
    put(g, "    __shared__ float s_a[TILE_K][BLOCK_X + %d];\n"
           "    __shared__ float s_b[TILE_K][BLOCK_X + %d];\n"
           "    const int row = blockIdx.y * BLOCK_Y + threadIdx.y;\n"
           "    const int col = blockIdx.x * BLOCK_X + threadIdx.x;\n"
           "    float acc0 = 0.0f, acc1 = 0.0f;\n",
        below(g, 2), below(g, 2));
    break;
  case 1:
  case 6:
    put(g, "    const int row = blockIdx.x;\n"
           "    const float* x_row = in + (size_t)row * m;\n"
           "    float max_val = -INFINITY, row_sum = 0.0f;\n"
           "    for (int i = threadIdx.x; i < m; i += blockDim.x) {\n"
           "        const float v = x_row[i];\n"
           "        const float new_max = fmaxf(max_val, v);\n"
           "        row_sum = row_sum * __expf(max_val - new_max) + __expf(v - new_max);\n"
           "        max_val = new_max;\n"
           "    }\n");
    break;
  case 2:
    put(g, "    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.y;\n"
           "    float mean = 0.0f, m2 = 0.0f;\n"
           "    int count = 0;\n"
           "    for (int i = threadIdx.x; i < m; i += blockDim.x) {\n"
           "        const float d = in[row * m + i] - mean;\n"
           "        mean += d / ++count;\n"
           "        m2 += d * (in[row * m + i] - mean);\n"
           "    }\n"
           "    const float inv_std = rsqrtf(m2 / m + %s);\n",
        below(g, 2) ? "1e-5f" : "eps");
    break;
  case 3:
    put(g, "    const int oc = blockIdx.z;\n"
           "    const int oy = blockIdx.y * BLOCK_Y + threadIdx.y;\n"
           "    const int ox = blockIdx.x * BLOCK_X + threadIdx.x;\n"
           "    float acc = bias ? bias[oc] : 0.0f;\n"
           "    for (int ic = 0; ic < k_dim; ++ic)\n"
           "        for (int ky = 0; ky < %d; ++ky)\n"
           "            for (int kx = 0; kx < %d; ++kx)\n"
           "                acc += in[(ic * n + oy + ky) * m + ox + kx] * w[((oc * k_dim + ic) * %d + ky) * %d + kx];\n",
        1 + 2 * below(g, 3), 1 + 2 * below(g, 3), 3, 3);
    break;
  default:
    put(g, "    const int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    const int stride = gridDim.x * blockDim.x;\n"
           "    const int tid = threadIdx.x;\n"
           "    float partial = 0.0f;\n"
           "    for (int i = idx; i < n * m; i += stride) partial += in[i];\n");
    break;
  }
}

static void kernel(struct gen *g, int family, int id) {
  g->vars = 0;
  g->depth = 0;
  put(g, "// ");
  put(g, "%s kernel, variant %d.\n", families[family], id);
  sentence(g);
  if (below(g, 2))
    sentence(g);
  put(g, "__global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)\n%s_kernel_v%d(const float* "
         "__restrict__ in, const float* __restrict__ w, const float* __restrict__ bias,\n"
         "    float* __restrict__ out, int n, int m, int k_dim) {\n",
      families[family], id);
  prelude(g, family);
  put(g, "    const int lane = threadIdx.x & 31;\n    int i = 0, k = 0, offset = 0;\n");
  int n = 4 + below(g, 12);
  for (int s = 0; s < n; s++)
    statement(g);
  put(g, "    if (idx < n) out[idx] = ");
  expr(g, 2);
  put(g, ";\n}\n\n");
}

static void forward(struct gen *g, int family, int kernels) {
  put(g, "extern \"C\" int kb_forward(const kb_tensor* in, int n_in, kb_tensor* out, int n_out,"
         " void* stream) {\n"
         "    if (n_in < %d || n_out < 1) return 1;\n"
         "    const int n = (int)in[0].shape[0];\n"
         "    const int m = in[0].ndim > 1 ? (int)in[0].shape[1] : 1;\n"
         "    const int k_dim = in[0].ndim > 2 ? (int)in[0].shape[2] : 1;\n"
         "    const float* w = n_in > 1 ? (const float*)in[1].data : nullptr;\n"
         "    const float* bias = n_in > 2 ? (const float*)in[2].data : nullptr;\n"
         "    cudaStream_t s = (cudaStream_t)stream;\n"
         "    dim3 block(BLOCK_X, BLOCK_Y);\n"
         "    dim3 grid((m + BLOCK_X - 1) / BLOCK_X, (n + BLOCK_Y - 1) / BLOCK_Y%s);\n",
      1 + below(g, 3), family == 3 ? ", k_dim" : "");
  for (int i = 0; i < kernels; i++)
    put(g, "    %s_kernel_v%d<<<grid, block, %d, s>>>((const float*)in[0].data, w, bias, "
           "(float*)out[0].data, n, m, k_dim);\n",
        families[family], i, below(g, 2) ? 0 : 1024 << below(g, 4));
  put(g, "    return cudaGetLastError() == cudaSuccess ? 0 : 1;\n}\n");
}

int kb__bench_cuda_source(uint64_t seed, const char *task, int family, struct kb_buf *out) {
  enum { MIN_BYTES = 4096, MAX_BYTES = 12288, FORWARD_BYTES = 1300 };
  struct gen g = {.s = seed, .b = out};
  family = ((family % 8) + 8) % 8;
  size_t start = out->len;
  /* the length is spread evenly over MIN_BYTES..MAX_BYTES; kb_forward takes about 1 KB */
  size_t target = MIN_BYTES + (size_t)below(&g, MAX_BYTES - MIN_BYTES);
  put(&g, "// Candidate for task %s (%s).\n", task, families[family]);
  sentence(&g);
  sentence(&g);
  put(&g, "#include <cuda_runtime.h>\n%s#include <math.h>\n#include \"kb_kernel.h\"\n\n",
      below(&g, 2) ? "#include <cuda_fp16.h>\n" : "");
  const char *used[4];
  int n_used = 0;
  knobs(&g, used, &n_used);
  int kernels = 0, helpers = 0;
  while (g.rc == KB_OK && out->len - start + FORWARD_BYTES < target) {
    size_t before = out->len;
    int is_kernel = 0;
    if (kernels > 0 && helpers < 4 && below(&g, 3) == 0) {
      helper(&g, helpers++);
    } else if (kernels < 4) {
      kernel(&g, family, kernels++);
      is_kernel = 1;
    } else {
      sentence(&g);
    }
    if (out->len - start + FORWARD_BYTES > MAX_BYTES && (!is_kernel || kernels > 1)) {
      out->len = before; /* too long: drop the block and end here */
      out->data[before] = '\0';
      kernels -= is_kernel;
      break;
    }
  }
  if (kernels == 0)
    kernel(&g, family, kernels++);
  forward(&g, family, kernels);
  while (g.rc == KB_OK && out->len - start < MIN_BYTES)
    sentence(&g);
  return g.rc;
}
