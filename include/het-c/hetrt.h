/*===- hetrt.h - C ABI between het-compiled code and libhetrt ----*- C -*-===*
 *
 * What an executable made by het-compile calls. Generated code calls the
 * kernels; the generated `main` calls hetrt_main, which drives training.
 *
 * Entry points (generated, see lib/Conversion/EntryPoints):
 *   void het_step(void **in, void **out);     the training step
 *   void het_predict(void **in, void **out);  logits of the forward model
 * `in`/`out` hold one contiguous row-major buffer per argument/result, in
 * the order `het_model_info` lists them ("in"/"out" lines).
 *
 * Kernels: void hetrt_<library>_<op>(const int64_t *meta, void *const *buffers)
 * with <library> `dnnl` (oneDNN primitives) or `ref` (het's reference
 * loops), <op> the het op name (`linear`, `conv2d_grad_filter`, ...).
 * `buffers`: the op's operands, then its results (fresh, uninitialized).
 * `meta`: operand count, result count, then rank and sizes of each buffer,
 * then the op's attributes (lib/Conversion/HetToLinalg/HetToRuntime.cpp).
 * A rank word's bits 32-39 give the buffer's layout: 0 row-major, 1 a
 * [N, C, H, W] activation stored channel-blocked as oneDNN's convolutions
 * want it; bits 40-47 its element format: 0 f32 (or i64 indices), 1 bf16,
 * 2 f16 (mixed precision: oneDNN's matrix products and convolutions take
 * bf16/f16 buffers) (lib/Runtime/KernelCall.h, docs/codegen.md).
 *
 *===----------------------------------------------------------------------===*/

#ifndef HET_C_HETRT_H
#define HET_C_HETRT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*hetrt_entry_fn)(void **in, void **out);

/* Parses the command line (--steps, --batch, --lr, --seed, --data, --eval,
 * --save, --load, --threads; --help lists them), initializes the arguments
 * as `het-eval --random-inputs SEED` does, trains, reports. `predict` may
 * be null (no accuracy then). Returns the process exit status. */
int hetrt_main(int argc, char **argv, const char *model_info, hetrt_entry_fn step,
               hetrt_entry_fn predict);

/* The driver of a pipeline (het-compile --cluster): one rank of it. The
 * stage functions are found by name (het_entry_<stage>_<phase>). */
int hetrt_pipeline_main(int argc, char **argv, const char *model_info);

/* The learning rate optimizer updates use: the executable's --lr when
 * given, else `compiled` (het-compile --lr). */
double hetrt_learning_rate(double compiled);

/* Stops the program with the reference evaluator's message when a label
 * is outside [0, classes); generated cross-entropy code calls it before it
 * gathers logits by label. */
void hetrt_check_labels(const int64_t *labels, int64_t count, int64_t classes);
/* The same for the indices of a generated table lookup (library=mlir):
 * each in [0, rows), else it exits naming the first one outside. */
void hetrt_check_indices(const int64_t *indices, int64_t count, int64_t rows);

/* A share [begin, end) of a generated loop's iterations; `context` is the
 * address of the values the loop uses (het-parallel-loops-to-runtime). */
typedef void (*hetrt_task)(int64_t begin, int64_t end, int64_t context);
/* Runs task over [0, iterations) on the executable's threads (--threads,
 * shared with oneDNN), one contiguous share each; on one thread, or inside
 * a parallel region, it is one call. */
void hetrt_parallel_for(int64_t iterations, hetrt_task task, int64_t context);

#ifdef __cplusplus
}
#endif

#endif /* HET_C_HETRT_H */
