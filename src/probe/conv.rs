//! The convolution check: one small FP32 NCHW cross-correlation through the legacy cuDNN API
//! that exists in both 8.x and 9.x (`cudnnFindConvolutionForwardAlgorithm`,
//! `cudnnConvolutionForward`), compared with a CPU reference computed here.
//!
//! The math type is `CUDNN_FMA_MATH`, so no TF32 path can run and FP32 results are within
//! rounding of the reference (the tolerance is [`super::MAX_ABS_ERROR`]). Device memory is
//! managed through the CUDA runtime loaded by name; everything allocated is released on
//! every path (a guard's `Drop`).

use std::ffi::{c_int, c_void};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::ffi::{self, CStatus, Cudnn, FwdAlgoPerf, Handle, RuntimeApi};
use super::{AlgoPerf, Conv, ConvResult, MAX_ABS_ERROR, Status};

/// The shapes of the check: input `n x c x h x w`, `k` filters of `c x r x s`, zero padding
/// `pad`, stride 1, dilation 1; the output is `n x k x h x w`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct ConvProblem {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub k: usize,
    pub r: usize,
    pub s: usize,
    pub pad: usize,
}

impl ConvProblem {
    /// N=2 C=3 H=W=16 K=4 R=S=3 pad 1.
    pub const STANDARD: ConvProblem = ConvProblem { n: 2, c: 3, h: 16, w: 16, k: 4, r: 3, s: 3, pad: 1 };

    /// Output height and width (stride 1, dilation 1).
    pub fn out_hw(&self) -> (usize, usize) {
        (self.h + 2 * self.pad + 1 - self.r, self.w + 2 * self.pad + 1 - self.s)
    }

    /// Deterministic inputs: multiples of 1/128 in [-1, 1), exact in FP32.
    pub fn inputs(&self) -> (Vec<f32>, Vec<f32>) {
        let mut state: u32 = 0x2545_f491;
        let mut next = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            ((state >> 24) as i32 - 128) as f32 / 128.0
        };
        let x = (0..self.n * self.c * self.h * self.w).map(|_| next()).collect();
        let w = (0..self.k * self.c * self.r * self.s).map(|_| next()).collect();
        (x, w)
    }
}

/// The CPU reference: `y[n][k][i][j] = sum over c, r, s of x[n][c][i+r-pad][j+s-pad] * w[k][c][r][s]`
/// (cross-correlation, zero padding), accumulated in f64.
pub fn cpu_reference(p: &ConvProblem, x: &[f32], w: &[f32]) -> Vec<f32> {
    let (oh, ow) = p.out_hw();
    let mut y = vec![0f32; p.n * p.k * oh * ow];
    for n in 0..p.n {
        for k in 0..p.k {
            for i in 0..oh {
                for j in 0..ow {
                    let mut acc = 0f64;
                    for c in 0..p.c {
                        for r in 0..p.r {
                            for s in 0..p.s {
                                let (yy, xx) = ((i + r) as isize - p.pad as isize, (j + s) as isize - p.pad as isize);
                                if yy < 0 || xx < 0 || yy >= p.h as isize || xx >= p.w as isize {
                                    continue;
                                }
                                let xv = x[((n * p.c + c) * p.h + yy as usize) * p.w + xx as usize] as f64;
                                let wv = w[((k * p.c + c) * p.r + r) * p.s + s] as f64;
                                acc += xv * wv;
                            }
                        }
                    }
                    y[((n * p.k + k) * oh + i) * ow + j] = acc as f32;
                }
            }
        }
    }
    y
}

/// Largest |a - b|; a non-finite value anywhere gives `f64::MAX` (JSON has no NaN).
pub fn max_abs_error(a: &[f32], b: &[f32]) -> f64 {
    let mut m = 0f64;
    for (x, y) in a.iter().zip(b) {
        let d = (*x as f64 - *y as f64).abs();
        if !d.is_finite() {
            return f64::MAX;
        }
        m = m.max(d);
    }
    if a.len() != b.len() { f64::MAX } else { m }
}

/// Frees what the check allocated, on every path.
struct Guard<'a> {
    api: &'a Cudnn,
    rt: RuntimeApi,
    device: Vec<*mut c_void>,
    tensors: Vec<Handle>,
    filters: Vec<Handle>,
    convs: Vec<Handle>,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        // SAFETY: every pointer and descriptor here was created successfully by the
        // matching create call and is released once.
        unsafe {
            for p in self.device.drain(..) {
                (self.rt.free)(p);
            }
            for (list, f) in
                [(&mut self.tensors, self.api.destroy_tensor), (&mut self.filters, self.api.destroy_filter), (&mut self.convs, self.api.destroy_conv)]
            {
                for h in list.drain(..) {
                    if let Some(f) = f {
                        f(h);
                    }
                }
            }
        }
    }
}

/// A failed call: which, and its status.
struct Failed {
    step: String,
    status: Status,
}

fn missing(name: &str) -> Failed {
    Failed { step: name.into(), status: Status { code: -1, name: format!("{name} is not exported") } }
}

/// Runs the check on device 0 with a live cuDNN handle.
pub fn run(api: &Cudnn, rt: &RuntimeApi, handle: Handle, step: fn(&str)) -> Conv {
    match run_inner(api, rt, handle, step) {
        Ok(r) => Conv::Done(r),
        Err(Failed { step, status }) => Conv::Failed { step, status },
    }
}

fn run_inner(api: &Cudnn, rt: &RuntimeApi, handle: Handle, step: fn(&str)) -> Result<ConvResult, Failed> {
    let p = ConvProblem::STANDARD;
    let (x, w) = p.inputs();
    let reference = cpu_reference(&p, &x, &w);
    let (oh, ow) = p.out_hw();
    let mut g = Guard { api, rt: *rt, device: Vec::new(), tensors: Vec::new(), filters: Vec::new(), convs: Vec::new() };

    let ck = |name: &str, s: CStatus| -> Result<(), Failed> { if s == 0 { Ok(()) } else { Err(Failed { step: name.into(), status: api.status(s) }) } };
    let ck_rt = |name: &str, s: CStatus| -> Result<(), Failed> { if s == 0 { Ok(()) } else { Err(Failed { step: name.into(), status: rt.status(s) }) } };
    let ci = |v: usize| v as c_int;

    let create_tensor = api.create_tensor.ok_or_else(|| missing("cudnnCreateTensorDescriptor"))?;
    let set_tensor = api.set_tensor_4d.ok_or_else(|| missing("cudnnSetTensor4dDescriptor"))?;
    let create_filter = api.create_filter.ok_or_else(|| missing("cudnnCreateFilterDescriptor"))?;
    let set_filter = api.set_filter_4d.ok_or_else(|| missing("cudnnSetFilter4dDescriptor"))?;
    let create_conv = api.create_conv.ok_or_else(|| missing("cudnnCreateConvolutionDescriptor"))?;
    let set_conv = api.set_conv_2d.ok_or_else(|| missing("cudnnSetConvolution2dDescriptor"))?;
    let set_math = api.set_math_type.ok_or_else(|| missing("cudnnSetConvolutionMathType"))?;
    let output_dim = api.output_dim.ok_or_else(|| missing("cudnnGetConvolution2dForwardOutputDim"))?;
    let find = api.find_fwd.ok_or_else(|| missing("cudnnFindConvolutionForwardAlgorithm"))?;
    let workspace = api.workspace.ok_or_else(|| missing("cudnnGetConvolutionForwardWorkspaceSize"))?;
    let forward = api.conv_fwd.ok_or_else(|| missing("cudnnConvolutionForward"))?;

    // SAFETY (whole block): each call matches its header prototype (see ffi.rs); every
    // out-pointer points at a live local; descriptors and device buffers are owned by `g`.
    unsafe {
        step("cudnnSetTensor4dDescriptor");
        let mut x_desc: Handle = std::ptr::null_mut();
        ck("cudnnCreateTensorDescriptor", create_tensor(&mut x_desc))?;
        g.tensors.push(x_desc);
        ck("cudnnSetTensor4dDescriptor", set_tensor(x_desc, ffi::CUDNN_TENSOR_NCHW, ffi::CUDNN_DATA_FLOAT, ci(p.n), ci(p.c), ci(p.h), ci(p.w)))?;
        let mut y_desc: Handle = std::ptr::null_mut();
        ck("cudnnCreateTensorDescriptor", create_tensor(&mut y_desc))?;
        g.tensors.push(y_desc);
        ck("cudnnSetTensor4dDescriptor", set_tensor(y_desc, ffi::CUDNN_TENSOR_NCHW, ffi::CUDNN_DATA_FLOAT, ci(p.n), ci(p.k), ci(oh), ci(ow)))?;

        step("cudnnSetFilter4dDescriptor");
        let mut w_desc: Handle = std::ptr::null_mut();
        ck("cudnnCreateFilterDescriptor", create_filter(&mut w_desc))?;
        g.filters.push(w_desc);
        // Note the argument order: data type, then format.
        ck("cudnnSetFilter4dDescriptor", set_filter(w_desc, ffi::CUDNN_DATA_FLOAT, ffi::CUDNN_TENSOR_NCHW, ci(p.k), ci(p.c), ci(p.r), ci(p.s)))?;

        step("cudnnSetConvolution2dDescriptor");
        let mut c_desc: Handle = std::ptr::null_mut();
        ck("cudnnCreateConvolutionDescriptor", create_conv(&mut c_desc))?;
        g.convs.push(c_desc);
        ck("cudnnSetConvolution2dDescriptor", set_conv(c_desc, ci(p.pad), ci(p.pad), 1, 1, 1, 1, ffi::CUDNN_CROSS_CORRELATION, ffi::CUDNN_DATA_FLOAT))?;
        ck("cudnnSetConvolutionMathType", set_math(c_desc, ffi::CUDNN_FMA_MATH))?;

        let (mut on, mut oc, mut ohh, mut oww) = (0, 0, 0, 0);
        ck("cudnnGetConvolution2dForwardOutputDim", output_dim(c_desc, x_desc, w_desc, &mut on, &mut oc, &mut ohh, &mut oww))?;
        if (on, oc, ohh, oww) != (ci(p.n), ci(p.k), ci(oh), ci(ow)) {
            return Err(Failed {
                step: "cudnnGetConvolution2dForwardOutputDim".into(),
                status: Status { code: -1, name: format!("unexpected output shape {on}x{oc}x{ohh}x{oww}") },
            });
        }

        let bytes = |v: usize| v * std::mem::size_of::<f32>();
        let mut alloc = |size: usize| -> Result<*mut c_void, Failed> {
            step("cudaMalloc");
            let mut p: *mut c_void = std::ptr::null_mut();
            ck_rt("cudaMalloc", (rt.malloc)(&mut p, size.max(1)))?;
            g.device.push(p);
            Ok(p)
        };
        let dx = alloc(bytes(x.len()))?;
        let dw = alloc(bytes(w.len()))?;
        let dy = alloc(bytes(reference.len()))?;
        step("cudaMemcpy");
        ck_rt("cudaMemcpy", (rt.memcpy)(dx, x.as_ptr().cast(), bytes(x.len()), ffi::CUDA_MEMCPY_HOST_TO_DEVICE))?;
        ck_rt("cudaMemcpy", (rt.memcpy)(dw, w.as_ptr().cast(), bytes(w.len()), ffi::CUDA_MEMCPY_HOST_TO_DEVICE))?;

        step("cudnnFindConvolutionForwardAlgorithm");
        let mut perf = [FwdAlgoPerf::default(); ffi::FWD_ALGO_COUNT as usize];
        let mut returned: c_int = 0;
        ck("cudnnFindConvolutionForwardAlgorithm", find(handle, x_desc, w_desc, c_desc, y_desc, ffi::FWD_ALGO_COUNT, &mut returned, perf.as_mut_ptr()))?;
        let perf = &perf[..(returned.clamp(0, ffi::FWD_ALGO_COUNT) as usize)];
        let algos: Vec<AlgoPerf> = perf
            .iter()
            .map(|a| AlgoPerf { algo: ffi::fwd_algo_name(a.algo), status: api.status(a.status), time_ms: a.time as f64, memory: a.memory as u64 })
            .collect();
        let Some(best) = perf.iter().find(|a| a.status == 0) else {
            return Err(Failed {
                step: "cudnnFindConvolutionForwardAlgorithm".into(),
                status: Status { code: -1, name: format!("no algorithm succeeded ({} tried)", perf.len()) },
            });
        };

        step("cudnnGetConvolutionForwardWorkspaceSize");
        let mut ws_size: usize = 0;
        ck("cudnnGetConvolutionForwardWorkspaceSize", workspace(handle, x_desc, w_desc, c_desc, y_desc, best.algo, &mut ws_size))?;
        let ws = if ws_size > 0 { alloc(ws_size)? } else { std::ptr::null_mut() };

        let (alpha, beta) = (1f32, 0f32);
        let fwd =
            || forward(handle, (&alpha as *const f32).cast(), x_desc, dx, w_desc, dw, c_desc, best.algo, ws, ws_size, (&beta as *const f32).cast(), y_desc, dy);
        step("cudnnConvolutionForward");
        ck("cudnnConvolutionForward", fwd())?;
        let mut y = vec![0f32; reference.len()];
        step("cudaMemcpy");
        ck_rt("cudaMemcpy", (rt.memcpy)(y.as_mut_ptr().cast(), dy, bytes(y.len()), ffi::CUDA_MEMCPY_DEVICE_TO_HOST))?;
        let err = max_abs_error(&y, &reference);

        // Timing: warm up, then the mean of `iterations` calls between two synchronizations.
        step("cudnnConvolutionForward (timing)");
        for _ in 0..3 {
            ck("cudnnConvolutionForward", fwd())?;
        }
        ck_rt("cudaDeviceSynchronize", (rt.sync)())?;
        let iterations = 20u32;
        let t = Instant::now();
        for _ in 0..iterations {
            ck("cudnnConvolutionForward", fwd())?;
        }
        ck_rt("cudaDeviceSynchronize", (rt.sync)())?;
        let forward_ms = t.elapsed().as_secs_f64() * 1000.0 / iterations as f64;

        Ok(ConvResult {
            problem: p,
            math_type: "CUDNN_FMA_MATH".into(),
            algos,
            algo: ffi::fwd_algo_name(best.algo),
            workspace_bytes: ws_size as u64,
            max_abs_error: err,
            matches: err < MAX_ABS_ERROR,
            forward_ms,
            iterations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_matches_a_hand_computed_point() {
        let p = ConvProblem { n: 1, c: 1, h: 3, w: 3, k: 1, r: 3, s: 3, pad: 1 };
        let x: Vec<f32> = (1..=9).map(|v| v as f32).collect();
        let mut w = vec![0f32; 9];
        w[4] = 1.0; // identity kernel
        assert_eq!(cpu_reference(&p, &x, &w), x);
        let w = vec![1f32; 9]; // box filter: the centre sees everything, a corner four values
        let y = cpu_reference(&p, &x, &w);
        assert_eq!(y[4], 45.0);
        assert_eq!(y[0], 1.0 + 2.0 + 4.0 + 5.0);
    }

    #[test]
    fn standard_problem_shapes_and_inputs() {
        let p = ConvProblem::STANDARD;
        assert_eq!(p.out_hw(), (16, 16));
        let (x, w) = p.inputs();
        assert_eq!((x.len(), w.len()), (2 * 3 * 16 * 16, 4 * 3 * 3 * 3));
        assert!(x.iter().chain(&w).all(|v| (-1.0..1.0).contains(v)));
        assert_eq!(p.inputs(), (x.clone(), w), "deterministic");
        let y = cpu_reference(&p, &x, &p.inputs().1);
        assert_eq!(y.len(), 2 * 4 * 16 * 16);
        assert!(y.iter().any(|v| *v != 0.0));
    }

    #[test]
    fn error_measure() {
        assert_eq!(max_abs_error(&[1.0, 2.0], &[1.0, 2.5]), 0.5);
        assert_eq!(max_abs_error(&[f32::NAN], &[0.0]), f64::MAX);
        assert_eq!(max_abs_error(&[1.0], &[1.0, 2.0]), f64::MAX);
    }
}
