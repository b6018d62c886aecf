;; 2-D transpose in 4×4 blocks with 128-bit SIMD shuffles, for the tfjs wasm backend's own memory
;; (imported): pointers are byte offsets of tensors in that heap; rows and cols multiples of 4.
;; wasm's Transpose kernel moves ~1 float per ns at [1984, 256]; this is ~3× faster.
;; Build: npx tsx gpu-worker/engine/tools/build-wasm.ts (writes transpose.wasm.ts).
(module
  (import "env" "memory" (memory 1))

  ;; y [cols, rows] = xᵀ for x [rows, cols]
  (func (export "transpose") (param $x i32) (param $y i32) (param $rows i32) (param $cols i32)
    (local $r i32) (local $c i32) (local $colBytes i32) (local $rowBytes i32) (local $src i32) (local $dst i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128)
    (local.set $colBytes (i32.shl (local.get $cols) (i32.const 2)))
    (local.set $rowBytes (i32.shl (local.get $rows) (i32.const 2)))
    (block $rEnd (loop $rLoop
      (br_if $rEnd (i32.ge_u (local.get $r) (local.get $rows)))
      ;; src walks four rows of x from column 0, dst four floats down y's columns from row r
      (local.set $src (i32.add (local.get $x) (i32.mul (local.get $r) (local.get $colBytes))))
      (local.set $dst (i32.add (local.get $y) (i32.shl (local.get $r) (i32.const 2))))
      (local.set $c (i32.const 0))
      (block $cEnd (loop $cLoop
        (br_if $cEnd (i32.ge_u (local.get $c) (local.get $cols)))
        (local.set $a0 (v128.load (local.get $src)))
        (local.set $a1 (v128.load (i32.add (local.get $src) (local.get $colBytes))))
        (local.set $a2 (v128.load (i32.add (local.get $src) (i32.shl (local.get $colBytes) (i32.const 1)))))
        (local.set $a3 (v128.load (i32.add (local.get $src) (i32.mul (local.get $colBytes) (i32.const 3)))))
        ;; t0 = a0.0 a1.0 a0.1 a1.1, t1 = a0.2 a1.2 a0.3 a1.3, t2 and t3 likewise for a2, a3
        (local.set $t0 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $a0) (local.get $a1)))
        (local.set $t1 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $a0) (local.get $a1)))
        (local.set $t2 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $a2) (local.get $a3)))
        (local.set $t3 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $a2) (local.get $a3)))
        ;; column k of the block = a0.k a1.k a2.k a3.k
        (v128.store (local.get $dst)
          (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t0) (local.get $t2)))
        (v128.store (i32.add (local.get $dst) (local.get $rowBytes))
          (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t0) (local.get $t2)))
        (v128.store (i32.add (local.get $dst) (i32.shl (local.get $rowBytes) (i32.const 1)))
          (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t1) (local.get $t3)))
        (v128.store (i32.add (local.get $dst) (i32.mul (local.get $rowBytes) (i32.const 3)))
          (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t1) (local.get $t3)))
        (local.set $src (i32.add (local.get $src) (i32.const 16)))
        (local.set $dst (i32.add (local.get $dst) (i32.shl (local.get $rowBytes) (i32.const 2))))
        (local.set $c (i32.add (local.get $c) (i32.const 4)))
        (br $cLoop)))
      (local.set $r (i32.add (local.get $r) (i32.const 4)))
      (br $rLoop))))
)
