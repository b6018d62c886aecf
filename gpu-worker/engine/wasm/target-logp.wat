;; The target log-probability's row maxima and its gradient, with 128-bit SIMD, for the tfjs wasm
;; backend's own memory (imported): pointers are byte offsets of tensors in that heap. Layouts:
;; logits x and probabilities p [n, V] (any V), targets [n] (int32), one value per row [n].
;; Build: npx tsx gpu-worker/engine/tools/build-wasm.ts (writes target-logp.wasm.ts).
(module
  (import "env" "memory" (memory 1))

  ;; max of the V floats at row (f32x4.max propagates NaN, so a broken row stays NaN)
  (func $rowMax (param $row i32) (param $V i32) (result f32)
    (local $end i32) (local $acc v128) (local $m f32)
    (local.set $end (i32.add (local.get $row) (i32.shl (local.get $V) (i32.const 2))))
    (local.set $m (f32.load (local.get $row)))
    (local.set $acc (f32x4.splat (local.get $m)))
    (block $vEnd (loop $v
      (br_if $vEnd (i32.gt_u (i32.add (local.get $row) (i32.const 16)) (local.get $end)))
      (local.set $acc (f32x4.max (local.get $acc) (v128.load (local.get $row))))
      (local.set $row (i32.add (local.get $row) (i32.const 16)))
      (br $v)))
    (block $sEnd (loop $s
      (br_if $sEnd (i32.ge_u (local.get $row) (local.get $end)))
      (local.set $m (f32.max (local.get $m) (f32.load (local.get $row))))
      (local.set $row (i32.add (local.get $row) (i32.const 4)))
      (br $s)))
    (f32.max (local.get $m) (f32.max
      (f32.max (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
      (f32.max (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc))))))

  ;; diff[r] = x[r, t_r] − max_j x[r, j],  pmax[r] = max_j p[r, j]  (the caller adds log pmax)
  (func (export "forward") (param $x i32) (param $p i32) (param $targets i32) (param $diff i32) (param $pmax i32) (param $n i32) (param $V i32)
    (local $r i32) (local $rowBytes i32)
    (local.set $rowBytes (i32.shl (local.get $V) (i32.const 2)))
    (block $done (loop $rows
      (br_if $done (i32.ge_u (local.get $r) (local.get $n)))
      (f32.store (local.get $diff) (f32.sub
        (f32.load (i32.add (local.get $x) (i32.shl (i32.load (local.get $targets)) (i32.const 2))))
        (call $rowMax (local.get $x) (local.get $V))))
      (f32.store (local.get $pmax) (call $rowMax (local.get $p) (local.get $V)))
      (local.set $x (i32.add (local.get $x) (local.get $rowBytes)))
      (local.set $p (i32.add (local.get $p) (local.get $rowBytes)))
      (local.set $targets (i32.add (local.get $targets) (i32.const 4)))
      (local.set $diff (i32.add (local.get $diff) (i32.const 4)))
      (local.set $pmax (i32.add (local.get $pmax) (i32.const 4)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))

  ;; dx[r, j] = g[r]·(onehot(t_r)_j − p[r, j])
  (func (export "backward") (param $g i32) (param $p i32) (param $targets i32) (param $dx i32) (param $n i32) (param $V i32)
    (local $r i32) (local $i i32) (local $rowBytes i32) (local $gr f32) (local $ng v128) (local $at i32)
    (local.set $rowBytes (i32.shl (local.get $V) (i32.const 2)))
    (block $done (loop $rows
      (br_if $done (i32.ge_u (local.get $r) (local.get $n)))
      (local.set $gr (f32.load (local.get $g)))
      (local.set $ng (f32x4.splat (f32.neg (local.get $gr))))
      (local.set $i (i32.const 0))
      (block $vEnd (loop $v
        (br_if $vEnd (i32.gt_u (i32.add (local.get $i) (i32.const 16)) (local.get $rowBytes)))
        (v128.store (i32.add (local.get $dx) (local.get $i)) (f32x4.mul (local.get $ng) (v128.load (i32.add (local.get $p) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $v)))
      (block $sEnd (loop $s
        (br_if $sEnd (i32.ge_u (local.get $i) (local.get $rowBytes)))
        (f32.store (i32.add (local.get $dx) (local.get $i)) (f32.mul (f32.neg (local.get $gr)) (f32.load (i32.add (local.get $p) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $s)))
      (local.set $at (i32.add (local.get $dx) (i32.shl (i32.load (local.get $targets)) (i32.const 2))))
      (f32.store (local.get $at) (f32.add (f32.load (local.get $at)) (local.get $gr)))
      (local.set $g (i32.add (local.get $g) (i32.const 4)))
      (local.set $p (i32.add (local.get $p) (local.get $rowBytes)))
      (local.set $dx (i32.add (local.get $dx) (local.get $rowBytes)))
      (local.set $targets (i32.add (local.get $targets) (i32.const 4)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rows))))
)
