;; Decode-step attention products over a time-major KV cache, with 128-bit SIMD, for the tfjs wasm
;; backend's own memory (imported): pointers are byte offsets of tensors in that heap.
;; Build: npx tsx gpu-worker/engine/tools/build-wasm.ts (writes decode-attention.wasm.ts).
;; Layouts (d = H·hd, row = B·d floats): qkv [B, 3d]; K, V [T, B, d]; bias [B|1, Tk];
;; S [B·H, Tk] (scores in, probabilities out); y [B, d]. hd must be a multiple of 4.
(module
  (import "env" "memory" (memory 1))

;; Both loops run position-major, so that the cache streams through memory once per step (walking
;; one channel across positions strides by a whole [B, d] row and measured ~2× slower).

  ;; S[b·H + h, t] = scale · q[b, h] · K[t, b, h] + bias[b·biasStride + t]
  (func (export "scores")
    (param $qkv i32) (param $K i32) (param $bias i32) (param $S i32)
    (param $B i32) (param $H i32) (param $hd i32) (param $Tk i32) (param $biasStride i32) (param $scale f32)
    (local $b i32) (local $h i32) (local $t i32) (local $c i32)
    (local $q i32) (local $k i32) (local $s i32) (local $biasT f32)
    (local $hdBytes i32) (local $dBytes i32) (local $rowBytes i32) (local $tkBytes i32) (local $acc v128)
    (local.set $hdBytes (i32.shl (local.get $hd) (i32.const 2)))
    (local.set $dBytes (i32.mul (local.get $H) (local.get $hdBytes)))
    (local.set $rowBytes (i32.mul (local.get $B) (local.get $dBytes)))
    (local.set $tkBytes (i32.shl (local.get $Tk) (i32.const 2)))
    (local.set $t (i32.const 0))
    (block $tEnd (loop $tLoop
      (br_if $tEnd (i32.ge_u (local.get $t) (local.get $Tk)))
      ;; k walks K[t, ·] contiguously; q walks the q parts of qkv; s = &S[0, t]
      (local.set $k (i32.add (local.get $K) (i32.mul (local.get $t) (local.get $rowBytes))))
      (local.set $s (i32.add (local.get $S) (i32.shl (local.get $t) (i32.const 2))))
      (local.set $q (local.get $qkv))
      (local.set $b (i32.const 0))
      (block $bEnd (loop $bLoop
        (br_if $bEnd (i32.ge_u (local.get $b) (local.get $B)))
        (local.set $biasT (f32.load (i32.add (local.get $bias)
          (i32.shl (i32.add (i32.mul (local.get $b) (local.get $biasStride)) (local.get $t)) (i32.const 2)))))
        (local.set $h (i32.const 0))
        (block $hEnd (loop $hLoop
          (br_if $hEnd (i32.ge_u (local.get $h) (local.get $H)))
          (local.set $acc (v128.const f32x4 0 0 0 0))
          (local.set $c (i32.const 0))
          (loop $cLoop
            (local.set $acc (f32x4.add (local.get $acc)
              (f32x4.mul (v128.load (i32.add (local.get $q) (local.get $c)))
                         (v128.load (i32.add (local.get $k) (local.get $c))))))
            (local.set $c (i32.add (local.get $c) (i32.const 16)))
            (br_if $cLoop (i32.lt_u (local.get $c) (local.get $hdBytes))))
          (f32.store (local.get $s)
            (f32.add
              (f32.mul (local.get $scale)
                (f32.add
                  (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
                  (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
              (local.get $biasT)))
          (local.set $s (i32.add (local.get $s) (local.get $tkBytes)))
          (local.set $q (i32.add (local.get $q) (local.get $hdBytes)))
          (local.set $k (i32.add (local.get $k) (local.get $hdBytes)))
          (local.set $h (i32.add (local.get $h) (i32.const 1)))
          (br $hLoop)))
        ;; skip this row's k and v parts of qkv
        (local.set $q (i32.add (local.get $q) (i32.shl (local.get $dBytes) (i32.const 1))))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $bLoop)))
      (local.set $t (i32.add (local.get $t) (i32.const 1)))
      (br $tLoop))))

  ;; y[b, h, c] = Σ_t S[b·H + h, t] · V[t, b, h, c]
  (func (export "mix")
    (param $S i32) (param $V i32) (param $y i32)
    (param $B i32) (param $H i32) (param $hd i32) (param $Tk i32)
    (local $ch i32) (local $C i32) (local $c i32) (local $t i32)
    (local $p i32) (local $v i32) (local $o i32) (local $end i32)
    (local $hdBytes i32) (local $rowBytes i32) (local $tkBytes i32) (local $w v128)
    (local.set $hdBytes (i32.shl (local.get $hd) (i32.const 2)))
    (local.set $C (i32.mul (local.get $B) (local.get $H)))
    (local.set $rowBytes (i32.mul (local.get $C) (local.get $hdBytes)))
    (local.set $tkBytes (i32.shl (local.get $Tk) (i32.const 2)))
    (memory.fill (local.get $y) (i32.const 0) (local.get $rowBytes))
    (local.set $t (i32.const 0))
    (block $tEnd (loop $tLoop
      (br_if $tEnd (i32.ge_u (local.get $t) (local.get $Tk)))
      (local.set $v (i32.add (local.get $V) (i32.mul (local.get $t) (local.get $rowBytes))))
      (local.set $p (i32.add (local.get $S) (i32.shl (local.get $t) (i32.const 2))))
      (local.set $o (local.get $y))
      (local.set $ch (i32.const 0))
      (block $chEnd (loop $chLoop
        (br_if $chEnd (i32.ge_u (local.get $ch) (local.get $C)))
        (local.set $w (f32x4.splat (f32.load (local.get $p))))
        (local.set $end (i32.add (local.get $o) (local.get $hdBytes)))
        (loop $cLoop
          (v128.store (local.get $o) (f32x4.add (v128.load (local.get $o))
            (f32x4.mul (local.get $w) (v128.load (local.get $v)))))
          (local.set $o (i32.add (local.get $o) (i32.const 16)))
          (local.set $v (i32.add (local.get $v) (i32.const 16)))
          (br_if $cLoop (i32.lt_u (local.get $o) (local.get $end))))
        (local.set $p (i32.add (local.get $p) (local.get $tkBytes)))
        (local.set $ch (i32.add (local.get $ch) (i32.const 1)))
        (br $chLoop)))
      (local.set $t (i32.add (local.get $t) (i32.const 1)))
      (br $tLoop))))
)
