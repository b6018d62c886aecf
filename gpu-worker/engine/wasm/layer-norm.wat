;; Layer norm over rows of d floats and its gradient, with 128-bit SIMD, for the tfjs wasm backend's
;; own memory (imported): pointers are byte offsets of tensors in that heap. d must be a multiple
;; of 4. Layouts: x, y, dy, dx [n, d]; gain, bias, dgain, dbias [d]; stats [n, 2] (mean, 1/σ).
;; Build: npx tsx gpu-worker/engine/tools/build-wasm.ts (writes layer-norm.wasm.ts).
(module
  (import "env" "memory" (memory 1))

  (func $hsum (param $v v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v)))))

  ;; y = (x − μ)/σ · gain + bias per row. Two passes for the moments: in float32 the one-pass
  ;; E[x²] − μ² cancels on rows whose mean is large against their spread.
  (func (export "forward")
    (param $x i32) (param $gain i32) (param $bias i32) (param $y i32) (param $stats i32)
    (param $n i32) (param $d i32) (param $eps f32)
    (local $r i32) (local $j i32) (local $dBytes i32) (local $mean f32) (local $rstd f32)
    (local $acc v128) (local $m v128) (local $s v128) (local $t v128)
    (local.set $dBytes (i32.shl (local.get $d) (i32.const 2)))
    (local.set $r (i32.const 0))
    (block $rEnd (loop $rLoop
      (br_if $rEnd (i32.ge_u (local.get $r) (local.get $n)))
      (local.set $acc (v128.const f32x4 0 0 0 0))
      (local.set $j (i32.const 0))
      (loop $sum
        (local.set $acc (f32x4.add (local.get $acc) (v128.load (i32.add (local.get $x) (local.get $j)))))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br_if $sum (i32.lt_u (local.get $j) (local.get $dBytes))))
      (local.set $mean (f32.div (call $hsum (local.get $acc)) (f32.convert_i32_u (local.get $d))))
      (local.set $m (f32x4.splat (local.get $mean)))
      (local.set $acc (v128.const f32x4 0 0 0 0))
      (local.set $j (i32.const 0))
      (loop $var
        (local.set $t (f32x4.sub (v128.load (i32.add (local.get $x) (local.get $j))) (local.get $m)))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (local.get $t) (local.get $t))))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br_if $var (i32.lt_u (local.get $j) (local.get $dBytes))))
      (local.set $rstd (f32.div (f32.const 1)
        (f32.sqrt (f32.add (f32.div (call $hsum (local.get $acc)) (f32.convert_i32_u (local.get $d))) (local.get $eps)))))
      (local.set $s (f32x4.splat (local.get $rstd)))
      (local.set $j (i32.const 0))
      (loop $out
        (v128.store (i32.add (local.get $y) (local.get $j))
          (f32x4.add
            (f32x4.mul
              (f32x4.mul (f32x4.sub (v128.load (i32.add (local.get $x) (local.get $j))) (local.get $m)) (local.get $s))
              (v128.load (i32.add (local.get $gain) (local.get $j))))
            (v128.load (i32.add (local.get $bias) (local.get $j)))))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br_if $out (i32.lt_u (local.get $j) (local.get $dBytes))))
      (f32.store (local.get $stats) (local.get $mean))
      (f32.store offset=4 (local.get $stats) (local.get $rstd))
      (local.set $x (i32.add (local.get $x) (local.get $dBytes)))
      (local.set $y (i32.add (local.get $y) (local.get $dBytes)))
      (local.set $stats (i32.add (local.get $stats) (i32.const 8)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rLoop))))

  ;; With x̂ = (x − μ)/σ and g = dy ⊙ gain: dx = (g − mean(g) − x̂ · mean(g ⊙ x̂)) / σ,
  ;; dgain = Σ_rows dy ⊙ x̂, dbias = Σ_rows dy.
  (func (export "backward")
    (param $dy i32) (param $x i32) (param $stats i32) (param $gain i32)
    (param $dx i32) (param $dgain i32) (param $dbias i32) (param $n i32) (param $d i32)
    (local $r i32) (local $j i32) (local $dBytes i32) (local $rstd f32) (local $invD f32)
    (local $m v128) (local $s v128) (local $sg v128) (local $sgx v128) (local $shift v128) (local $slope v128)
    (local $dyv v128) (local $xh v128) (local $g v128)
    (local.set $dBytes (i32.shl (local.get $d) (i32.const 2)))
    (local.set $invD (f32.div (f32.const 1) (f32.convert_i32_u (local.get $d))))
    (memory.fill (local.get $dgain) (i32.const 0) (local.get $dBytes))
    (memory.fill (local.get $dbias) (i32.const 0) (local.get $dBytes))
    (local.set $r (i32.const 0))
    (block $rEnd (loop $rLoop
      (br_if $rEnd (i32.ge_u (local.get $r) (local.get $n)))
      (local.set $m (f32x4.splat (f32.load (local.get $stats))))
      (local.set $rstd (f32.load offset=4 (local.get $stats)))
      (local.set $s (f32x4.splat (local.get $rstd)))
      (local.set $sg (v128.const f32x4 0 0 0 0))
      (local.set $sgx (v128.const f32x4 0 0 0 0))
      (local.set $j (i32.const 0))
      (loop $sums
        (local.set $dyv (v128.load (i32.add (local.get $dy) (local.get $j))))
        (local.set $xh (f32x4.mul (f32x4.sub (v128.load (i32.add (local.get $x) (local.get $j))) (local.get $m)) (local.get $s)))
        (local.set $g (f32x4.mul (local.get $dyv) (v128.load (i32.add (local.get $gain) (local.get $j)))))
        (local.set $sg (f32x4.add (local.get $sg) (local.get $g)))
        (local.set $sgx (f32x4.add (local.get $sgx) (f32x4.mul (local.get $g) (local.get $xh))))
        (v128.store (i32.add (local.get $dgain) (local.get $j))
          (f32x4.add (v128.load (i32.add (local.get $dgain) (local.get $j))) (f32x4.mul (local.get $dyv) (local.get $xh))))
        (v128.store (i32.add (local.get $dbias) (local.get $j))
          (f32x4.add (v128.load (i32.add (local.get $dbias) (local.get $j))) (local.get $dyv)))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br_if $sums (i32.lt_u (local.get $j) (local.get $dBytes))))
      ;; dx = g·(1/σ) + shift − x̂·slope, shift = −mean(g)/σ, slope = mean(g ⊙ x̂)/σ
      (local.set $shift (f32x4.splat (f32.neg (f32.mul (f32.mul (call $hsum (local.get $sg)) (local.get $invD)) (local.get $rstd)))))
      (local.set $slope (f32x4.splat (f32.mul (f32.mul (call $hsum (local.get $sgx)) (local.get $invD)) (local.get $rstd))))
      (local.set $j (i32.const 0))
      (loop $out
        (local.set $xh (f32x4.mul (f32x4.sub (v128.load (i32.add (local.get $x) (local.get $j))) (local.get $m)) (local.get $s)))
        (local.set $g (f32x4.mul (v128.load (i32.add (local.get $dy) (local.get $j))) (v128.load (i32.add (local.get $gain) (local.get $j)))))
        (v128.store (i32.add (local.get $dx) (local.get $j))
          (f32x4.sub
            (f32x4.add (f32x4.mul (local.get $g) (local.get $s)) (local.get $shift))
            (f32x4.mul (local.get $xh) (local.get $slope))))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br_if $out (i32.lt_u (local.get $j) (local.get $dBytes))))
      (local.set $dy (i32.add (local.get $dy) (local.get $dBytes)))
      (local.set $x (i32.add (local.get $x) (local.get $dBytes)))
      (local.set $dx (i32.add (local.get $dx) (local.get $dBytes)))
      (local.set $stats (i32.add (local.get $stats) (i32.const 8)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rLoop))))
)
