;; Sums of the rows of a matrix, with 128-bit SIMD, for the tfjs wasm backend's own memory
;; (imported): pointers are byte offsets of tensors in that heap; cols a multiple of 4.
;; Build: npx tsx gpu-worker/engine/tools/build-wasm.ts (writes row-sums.wasm.ts).
(module
  (import "env" "memory" (memory 1))

  ;; out[r] = Σ_c x[r, c] for x [rows, cols]
  (func (export "rowSums") (param $x i32) (param $out i32) (param $rows i32) (param $cols i32)
    (local $r i32) (local $end i32) (local $a0 v128) (local $a1 v128)
    (block $rEnd (loop $rLoop
      (br_if $rEnd (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $end (i32.add (local.get $x) (i32.shl (local.get $cols) (i32.const 2))))
      (local.set $a0 (v128.const f32x4 0 0 0 0))
      (local.set $a1 (v128.const f32x4 0 0 0 0))
      ;; two accumulators, eight floats a step while at least eight remain
      (block $pairsEnd (loop $pairs
        (br_if $pairsEnd (i32.gt_u (i32.add (local.get $x) (i32.const 32)) (local.get $end)))
        (local.set $a0 (f32x4.add (local.get $a0) (v128.load (local.get $x))))
        (local.set $a1 (f32x4.add (local.get $a1) (v128.load offset=16 (local.get $x))))
        (local.set $x (i32.add (local.get $x) (i32.const 32)))
        (br $pairs)))
      (if (i32.lt_u (local.get $x) (local.get $end))
        (then
          (local.set $a0 (f32x4.add (local.get $a0) (v128.load (local.get $x))))
          (local.set $x (i32.add (local.get $x) (i32.const 16)))))
      (local.set $a0 (f32x4.add (local.get $a0) (local.get $a1)))
      (f32.store (local.get $out) (f32.add
        (f32.add (f32x4.extract_lane 0 (local.get $a0)) (f32x4.extract_lane 1 (local.get $a0)))
        (f32.add (f32x4.extract_lane 2 (local.get $a0)) (f32x4.extract_lane 3 (local.get $a0)))))
      (local.set $out (i32.add (local.get $out) (i32.const 4)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rLoop))))
)
