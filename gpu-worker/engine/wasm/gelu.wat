;; The elementwise parts of GELU (tanh approximation, as x·σ(2u), u = c(x + a x³)) and its
;; gradient, with 128-bit SIMD, for the tfjs wasm backend's own memory (imported): pointers are
;; byte offsets of tensors in that heap, n (elements) a multiple of 4. σ itself is wasm's XNNPACK
;; Sigmoid kernel: an exponential written here (Cephes' polynomial) ran ~3× slower.
;; Constants: 2c = 2·√(2/π) = 1.5957691216, 2ca = 0.0713548163, 6ca = 0.2140644488 (a = 0.044715).
;; Build: npx tsx gpu-worker/engine/tools/build-wasm.ts (writes gelu.wasm.ts).
(module
  (import "env" "memory" (memory 1))

  ;; out = 2u = x·(2c + 2ca·x²), the sigmoid's argument
  (func (export "argument") (param $x i32) (param $out i32) (param $n i32)
    (local $end i32) (local $xv v128)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
      (local.set $xv (v128.load (local.get $x)))
      (v128.store (local.get $out) (f32x4.mul (local.get $xv)
        (f32x4.add (v128.const f32x4 1.5957691216 1.5957691216 1.5957691216 1.5957691216)
          (f32x4.mul (f32x4.mul (local.get $xv) (local.get $xv)) (v128.const f32x4 0.0713548163 0.0713548163 0.0713548163 0.0713548163)))))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $out (i32.add (local.get $out) (i32.const 16)))
      (br $l))))

  ;; dx = dy·(s + x·s(1 − s)·(2c + 6ca·x²)), s = σ(2u)
  (func (export "backward") (param $dy i32) (param $x i32) (param $s i32) (param $dx i32) (param $n i32)
    (local $end i32) (local $xv v128) (local $sv v128)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
      (local.set $xv (v128.load (local.get $x)))
      (local.set $sv (v128.load (local.get $s)))
      (v128.store (local.get $dx)
        (f32x4.mul (v128.load (local.get $dy))
          (f32x4.add (local.get $sv)
            (f32x4.mul
              (f32x4.mul (f32x4.mul (local.get $xv) (local.get $sv)) (f32x4.sub (v128.const f32x4 1 1 1 1) (local.get $sv)))
              (f32x4.add (v128.const f32x4 1.5957691216 1.5957691216 1.5957691216 1.5957691216)
                (f32x4.mul (f32x4.mul (local.get $xv) (local.get $xv))
                  (v128.const f32x4 0.2140644488 0.2140644488 0.2140644488 0.2140644488)))))))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $s (i32.add (local.get $s) (i32.const 16)))
      (local.set $dy (i32.add (local.get $dy) (i32.const 16)))
      (local.set $dx (i32.add (local.get $dx) (i32.const 16)))
      (br $l))))
)
