// The nn engine's public surface: tensors and the tape, ops (with the softmax family, the shape ops and
// the Llama ops: RMSNorm, SwiGLU, rotary, fused attention), layers, optimizers, checkpoints; the Llama-
// layout transformer with its KV cache, sampling and checkpoint files.
export * from './attention.ts';
export * from './checkpoint.ts';
export { gemm, gemmKernel } from './gemm.ts';
export * from './kv-cache.ts';
export * from './layers.ts';
export * from './llama-ops.ts';
export * from './ops.ts';
export * from './optim.ts';
export * from './rope.ts';
export * from './safetensors.ts';
export * from './sampling.ts';
export * from './shape-ops.ts';
export * from './softmax.ts';
export * from './tensor.ts';
export * from './transformer.ts';
export * from './transformer-checkpoint.ts';
