// The nn engine's public surface: tensors and the tape, ops (with the softmax family, the shape ops and
// the Llama ops: RMSNorm, SwiGLU, rotary, fused attention), layers, optimizers, checkpoints.
export * from './attention.ts';
export * from './checkpoint.ts';
export { gemm, gemmKernel } from './gemm.ts';
export * from './layers.ts';
export * from './llama-ops.ts';
export * from './ops.ts';
export * from './optim.ts';
export * from './rope.ts';
export * from './safetensors.ts';
export * from './shape-ops.ts';
export * from './softmax.ts';
export * from './tensor.ts';
