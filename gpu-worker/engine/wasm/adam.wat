;; Adam(W) for one parameter, with 128-bit SIMD, for the tfjs wasm backend's own memory (imported):
;; pointers are byte offsets of tensors in that heap; n a multiple of 4 (the caller does the rest).
;; The formula of optim.ts's ADAM_KERNEL: g ← scale·g; m' = β1 m + (1−β1) g; v' = β2 v + (1−β2) g²;
;; p' = p − lr·(m'/bc1)/(√(v'/bc2) + ε) − decay·p.
;; Build: npx tsx gpu-worker/engine/tools/build-wasm.ts (writes adam.wasm.ts).
(module
  (import "env" "memory" (memory 1))

  (func (export "adam")
    (param $p i32) (param $g i32) (param $m i32) (param $v i32) (param $po i32) (param $mo i32) (param $vo i32) (param $n i32)
    (param $scale f32) (param $lr f32) (param $beta1 f32) (param $beta2 f32) (param $bc1 f32) (param $bc2 f32) (param $eps f32) (param $decay f32)
    (local $i i32) (local $end i32) (local $gv v128) (local $mv v128) (local $vv v128) (local $pv v128)
    (local $sc v128) (local $b1 v128) (local $c1 v128) (local $b2 v128) (local $c2 v128)
    (local $lrBc1 v128) (local $invBc2 v128) (local $ep v128) (local $dec v128)
    (local.set $sc (f32x4.splat (local.get $scale)))
    (local.set $b1 (f32x4.splat (local.get $beta1)))
    (local.set $c1 (f32x4.splat (f32.sub (f32.const 1) (local.get $beta1))))
    (local.set $b2 (f32x4.splat (local.get $beta2)))
    (local.set $c2 (f32x4.splat (f32.sub (f32.const 1) (local.get $beta2))))
    (local.set $lrBc1 (f32x4.splat (f32.div (local.get $lr) (local.get $bc1))))
    (local.set $invBc2 (f32x4.splat (f32.div (f32.const 1) (local.get $bc2))))
    (local.set $ep (f32x4.splat (local.get $eps)))
    (local.set $dec (f32x4.splat (local.get $decay)))
    (local.set $end (i32.shl (local.get $n) (i32.const 2)))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
      (local.set $gv (f32x4.mul (v128.load (i32.add (local.get $g) (local.get $i))) (local.get $sc)))
      (local.set $mv (f32x4.add (f32x4.mul (local.get $b1) (v128.load (i32.add (local.get $m) (local.get $i))))
        (f32x4.mul (local.get $c1) (local.get $gv))))
      (local.set $vv (f32x4.add (f32x4.mul (local.get $b2) (v128.load (i32.add (local.get $v) (local.get $i))))
        (f32x4.mul (local.get $c2) (f32x4.mul (local.get $gv) (local.get $gv)))))
      (local.set $pv (v128.load (i32.add (local.get $p) (local.get $i))))
      (v128.store (i32.add (local.get $mo) (local.get $i)) (local.get $mv))
      (v128.store (i32.add (local.get $vo) (local.get $i)) (local.get $vv))
      (v128.store (i32.add (local.get $po) (local.get $i))
        (f32x4.sub
          (f32x4.sub (local.get $pv)
            (f32x4.div (f32x4.mul (local.get $lrBc1) (local.get $mv))
              (f32x4.add (f32x4.sqrt (f32x4.mul (local.get $vv) (local.get $invBc2))) (local.get $ep))))
          (f32x4.mul (local.get $dec) (local.get $pv))))
      (local.set $i (i32.add (local.get $i) (i32.const 16)))
      (br $l))))
)
