// The nn engine's public surface: tensors and the tape, ops (with the softmax family and the shape ops),
// layers, optimizers, checkpoints.
export * from './checkpoint.ts';
export { gemm, gemmKernel } from './gemm.ts';
export * from './layers.ts';
export * from './ops.ts';
export * from './optim.ts';
export * from './safetensors.ts';
export * from './shape-ops.ts';
export * from './softmax.ts';
export * from './tensor.ts';
