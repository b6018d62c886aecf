;; Token + position embedding rows and their scatter-add gradient, with 128-bit SIMD, for the tfjs
;; wasm backend's own memory (imported): pointers are byte offsets of tensors in that heap, d (the
;; width) a multiple of 4. Layouts: wte [V, d], wpe [ctx, d], ids and positions [n] (int32),
;; out and dy [n, d].
;; Build: npx tsx gpu-worker/engine/tools/build-wasm.ts (writes embed.wasm.ts).
(module
  (import "env" "memory" (memory 1))

  ;; out_i = wte[ids_i] + wpe[positions_i]
  (func (export "forward") (param $wte i32) (param $ids i32) (param $wpe i32) (param $positions i32) (param $out i32) (param $n i32) (param $d i32)
    (local $i i32) (local $c i32) (local $dBytes i32) (local $tok i32) (local $pos i32)
    (local.set $dBytes (i32.shl (local.get $d) (i32.const 2)))
    (block $done (loop $rows
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $tok (i32.add (local.get $wte) (i32.mul (i32.load (local.get $ids)) (local.get $dBytes))))
      (local.set $pos (i32.add (local.get $wpe) (i32.mul (i32.load (local.get $positions)) (local.get $dBytes))))
      (local.set $c (i32.const 0))
      (loop $cols
        (v128.store (i32.add (local.get $out) (local.get $c))
          (f32x4.add (v128.load (i32.add (local.get $tok) (local.get $c))) (v128.load (i32.add (local.get $pos) (local.get $c)))))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (br_if $cols (i32.lt_u (local.get $c) (local.get $dBytes))))
      (local.set $ids (i32.add (local.get $ids) (i32.const 4)))
      (local.set $positions (i32.add (local.get $positions) (i32.const 4)))
      (local.set $out (i32.add (local.get $out) (local.get $dBytes)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $rows))))

  ;; dwte = Σ_i dy_i at row ids_i, dwpe = Σ_i dy_i at row positions_i (both zeroed first)
  (func (export "backward")
    (param $dy i32) (param $ids i32) (param $positions i32) (param $dwte i32) (param $dwpe i32)
    (param $n i32) (param $d i32) (param $vocab i32) (param $ctx i32)
    (local $i i32) (local $c i32) (local $dBytes i32) (local $tok i32) (local $pos i32) (local $g v128)
    (local.set $dBytes (i32.shl (local.get $d) (i32.const 2)))
    (memory.fill (local.get $dwte) (i32.const 0) (i32.mul (local.get $vocab) (local.get $dBytes)))
    (memory.fill (local.get $dwpe) (i32.const 0) (i32.mul (local.get $ctx) (local.get $dBytes)))
    (block $done (loop $rows
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $tok (i32.add (local.get $dwte) (i32.mul (i32.load (local.get $ids)) (local.get $dBytes))))
      (local.set $pos (i32.add (local.get $dwpe) (i32.mul (i32.load (local.get $positions)) (local.get $dBytes))))
      (local.set $c (i32.const 0))
      (loop $cols
        (local.set $g (v128.load (i32.add (local.get $dy) (local.get $c))))
        (v128.store (i32.add (local.get $tok) (local.get $c)) (f32x4.add (v128.load (i32.add (local.get $tok) (local.get $c))) (local.get $g)))
        (v128.store (i32.add (local.get $pos) (local.get $c)) (f32x4.add (v128.load (i32.add (local.get $pos) (local.get $c))) (local.get $g)))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (br_if $cols (i32.lt_u (local.get $c) (local.get $dBytes))))
      (local.set $ids (i32.add (local.get $ids) (i32.const 4)))
      (local.set $positions (i32.add (local.get $positions) (i32.const 4)))
      (local.set $dy (i32.add (local.get $dy) (local.get $dBytes)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $rows))))
)
