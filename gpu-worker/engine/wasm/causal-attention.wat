;; Causal self-attention products for training, with 128-bit SIMD, for the tfjs wasm backend's own
;; memory (imported): pointers are byte offsets of tensors in that heap.
;; Build: npx tsx gpu-worker/engine/tools/build-wasm.ts (writes causal-attention.wasm.ts).
;;
;; Layouts (d = H·hd, hd a multiple of 4; Tp = T rounded up to a multiple of 4; channel bh = b·H + h):
;;   qkv, dqkv [B·T, 3d]: q, k, v side by side, head h of each at columns h·hd … (h+1)·hd
;;   S, P      [B·H, T, Tp]: scores in, probabilities out (softmax over the last axis)
;;   y, dy     [B·T, d]
;; Every product reads q, k, v and writes y and the gradients in those layouts, so no transposes
;; are needed, and only keys j ≤ i are computed (about half of the T×T products).
(module
  (import "env" "memory" (memory 1))

;; Keys are taken four at a time: rows j … j+3 of a channel whose row 0 is at `rows`, each
;; `rowBytes` apart, for j < n (so ⌈n/4⌉ blocks). A block that reaches past the last key reads the
;; last key again (its weight is 0 or its score is overwritten by the mask), so no row outside the
;; sequence is touched. Each helper does a whole query row: V8 does not inline wasm calls, and a
;; call per block of keys cost about half the time of the products.

  ;; out[j] = scale · x·row_j for j < n rounded up to a multiple of 4; x is a row of hdBytes/4 floats
  (func $dotRow (param $x i32) (param $rows i32) (param $out i32) (param $n i32) (param $scale v128)
    (param $last i32) (param $rowBytes i32) (param $hdBytes i32)
    (local $j i32) (local $c i32) (local $o0 i32) (local $o1 i32) (local $o2 i32) (local $o3 i32)
    (local $xv v128) (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $u01 v128) (local $u23 v128)
    (loop $jLoop
      (local.set $o0 (i32.mul (select (local.get $j) (local.get $last) (i32.lt_u (local.get $j) (local.get $last))) (local.get $rowBytes)))
      (local.set $o1 (i32.mul (select (i32.add (local.get $j) (i32.const 1)) (local.get $last) (i32.lt_u (i32.add (local.get $j) (i32.const 1)) (local.get $last))) (local.get $rowBytes)))
      (local.set $o2 (i32.mul (select (i32.add (local.get $j) (i32.const 2)) (local.get $last) (i32.lt_u (i32.add (local.get $j) (i32.const 2)) (local.get $last))) (local.get $rowBytes)))
      (local.set $o3 (i32.mul (select (i32.add (local.get $j) (i32.const 3)) (local.get $last) (i32.lt_u (i32.add (local.get $j) (i32.const 3)) (local.get $last))) (local.get $rowBytes)))
      (local.set $a0 (v128.const f32x4 0 0 0 0))
      (local.set $a1 (v128.const f32x4 0 0 0 0))
      (local.set $a2 (v128.const f32x4 0 0 0 0))
      (local.set $a3 (v128.const f32x4 0 0 0 0))
      (local.set $c (i32.const 0))
      (loop $cLoop
        (local.set $xv (v128.load (i32.add (local.get $x) (local.get $c))))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $xv) (v128.load (i32.add (i32.add (local.get $rows) (local.get $o0)) (local.get $c))))))
        (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $xv) (v128.load (i32.add (i32.add (local.get $rows) (local.get $o1)) (local.get $c))))))
        (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $xv) (v128.load (i32.add (i32.add (local.get $rows) (local.get $o2)) (local.get $c))))))
        (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $xv) (v128.load (i32.add (i32.add (local.get $rows) (local.get $o3)) (local.get $c))))))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (br_if $cLoop (i32.lt_u (local.get $c) (local.get $hdBytes))))
      ;; lane m of the sum = the sum of a_m's lanes, by two rounds of pairwise shuffles
      (local.set $u01 (f32x4.add
        (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $a0) (local.get $a1))
        (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $a0) (local.get $a1))))
      (local.set $u23 (f32x4.add
        (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $a2) (local.get $a3))
        (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $a2) (local.get $a3))))
      (v128.store (i32.add (local.get $out) (i32.shl (local.get $j) (i32.const 2)))
        (f32x4.mul (local.get $scale) (f32x4.add
          (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $u01) (local.get $u23))
          (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $u01) (local.get $u23)))))
      (local.set $j (i32.add (local.get $j) (i32.const 4)))
      (br_if $jLoop (i32.lt_u (local.get $j) (local.get $n)))))

  ;; out += Σ_j<n w[j]·row_j (out and the rows of hdBytes/4 floats)
  (func $mixRow (param $out i32) (param $w i32) (param $rows i32) (param $n i32)
    (param $last i32) (param $rowBytes i32) (param $hdBytes i32)
    (local $j i32) (local $c i32) (local $o0 i32) (local $o1 i32) (local $o2 i32) (local $o3 i32)
    (local $wv v128) (local $w0 v128) (local $w1 v128) (local $w2 v128) (local $w3 v128)
    (loop $jLoop
      (local.set $o0 (i32.mul (select (local.get $j) (local.get $last) (i32.lt_u (local.get $j) (local.get $last))) (local.get $rowBytes)))
      (local.set $o1 (i32.mul (select (i32.add (local.get $j) (i32.const 1)) (local.get $last) (i32.lt_u (i32.add (local.get $j) (i32.const 1)) (local.get $last))) (local.get $rowBytes)))
      (local.set $o2 (i32.mul (select (i32.add (local.get $j) (i32.const 2)) (local.get $last) (i32.lt_u (i32.add (local.get $j) (i32.const 2)) (local.get $last))) (local.get $rowBytes)))
      (local.set $o3 (i32.mul (select (i32.add (local.get $j) (i32.const 3)) (local.get $last) (i32.lt_u (i32.add (local.get $j) (i32.const 3)) (local.get $last))) (local.get $rowBytes)))
      (local.set $wv (v128.load (i32.add (local.get $w) (i32.shl (local.get $j) (i32.const 2)))))
      (local.set $w0 (i8x16.shuffle 0 1 2 3 0 1 2 3 0 1 2 3 0 1 2 3 (local.get $wv) (local.get $wv)))
      (local.set $w1 (i8x16.shuffle 4 5 6 7 4 5 6 7 4 5 6 7 4 5 6 7 (local.get $wv) (local.get $wv)))
      (local.set $w2 (i8x16.shuffle 8 9 10 11 8 9 10 11 8 9 10 11 8 9 10 11 (local.get $wv) (local.get $wv)))
      (local.set $w3 (i8x16.shuffle 12 13 14 15 12 13 14 15 12 13 14 15 12 13 14 15 (local.get $wv) (local.get $wv)))
      (local.set $c (i32.const 0))
      (loop $cLoop
        (v128.store (i32.add (local.get $out) (local.get $c))
          (f32x4.add
            (f32x4.add (v128.load (i32.add (local.get $out) (local.get $c)))
              (f32x4.add
                (f32x4.mul (local.get $w0) (v128.load (i32.add (i32.add (local.get $rows) (local.get $o0)) (local.get $c))))
                (f32x4.mul (local.get $w1) (v128.load (i32.add (i32.add (local.get $rows) (local.get $o1)) (local.get $c))))))
            (f32x4.add
              (f32x4.mul (local.get $w2) (v128.load (i32.add (i32.add (local.get $rows) (local.get $o2)) (local.get $c))))
              (f32x4.mul (local.get $w3) (v128.load (i32.add (i32.add (local.get $rows) (local.get $o3)) (local.get $c)))))))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (br_if $cLoop (i32.lt_u (local.get $c) (local.get $hdBytes))))
      (local.set $j (i32.add (local.get $j) (i32.const 4)))
      (br_if $jLoop (i32.lt_u (local.get $j) (local.get $n)))))

  ;; The backward pass's products for one query row i, keys j < n, all three in step:
  ;;   dq_i += Σ_j ds[j]·k_j,   dk_j += ds[j]·q_i,   dv_j += p[j]·dy_i
  (func $gradRow
    (param $q i32) (param $dy i32) (param $dq i32) (param $k i32) (param $dk i32) (param $dv i32)
    (param $ds i32) (param $p i32) (param $n i32) (param $last i32) (param $rowBytes i32) (param $hdBytes i32)
    (local $j i32) (local $c i32) (local $o0 i32) (local $o1 i32) (local $o2 i32) (local $o3 i32) (local $at i32)
    (local $sv v128) (local $pv v128) (local $s0 v128) (local $s1 v128) (local $s2 v128) (local $s3 v128)
    (local $p0 v128) (local $p1 v128) (local $p2 v128) (local $p3 v128) (local $qv v128) (local $dyv v128)
    (loop $jLoop
      (local.set $o0 (i32.mul (select (local.get $j) (local.get $last) (i32.lt_u (local.get $j) (local.get $last))) (local.get $rowBytes)))
      (local.set $o1 (i32.mul (select (i32.add (local.get $j) (i32.const 1)) (local.get $last) (i32.lt_u (i32.add (local.get $j) (i32.const 1)) (local.get $last))) (local.get $rowBytes)))
      (local.set $o2 (i32.mul (select (i32.add (local.get $j) (i32.const 2)) (local.get $last) (i32.lt_u (i32.add (local.get $j) (i32.const 2)) (local.get $last))) (local.get $rowBytes)))
      (local.set $o3 (i32.mul (select (i32.add (local.get $j) (i32.const 3)) (local.get $last) (i32.lt_u (i32.add (local.get $j) (i32.const 3)) (local.get $last))) (local.get $rowBytes)))
      (local.set $sv (v128.load (i32.add (local.get $ds) (i32.shl (local.get $j) (i32.const 2)))))
      (local.set $pv (v128.load (i32.add (local.get $p) (i32.shl (local.get $j) (i32.const 2)))))
      (local.set $s0 (i8x16.shuffle 0 1 2 3 0 1 2 3 0 1 2 3 0 1 2 3 (local.get $sv) (local.get $sv)))
      (local.set $s1 (i8x16.shuffle 4 5 6 7 4 5 6 7 4 5 6 7 4 5 6 7 (local.get $sv) (local.get $sv)))
      (local.set $s2 (i8x16.shuffle 8 9 10 11 8 9 10 11 8 9 10 11 8 9 10 11 (local.get $sv) (local.get $sv)))
      (local.set $s3 (i8x16.shuffle 12 13 14 15 12 13 14 15 12 13 14 15 12 13 14 15 (local.get $sv) (local.get $sv)))
      (local.set $p0 (i8x16.shuffle 0 1 2 3 0 1 2 3 0 1 2 3 0 1 2 3 (local.get $pv) (local.get $pv)))
      (local.set $p1 (i8x16.shuffle 4 5 6 7 4 5 6 7 4 5 6 7 4 5 6 7 (local.get $pv) (local.get $pv)))
      (local.set $p2 (i8x16.shuffle 8 9 10 11 8 9 10 11 8 9 10 11 8 9 10 11 (local.get $pv) (local.get $pv)))
      (local.set $p3 (i8x16.shuffle 12 13 14 15 12 13 14 15 12 13 14 15 12 13 14 15 (local.get $pv) (local.get $pv)))
      (local.set $c (i32.const 0))
      (loop $cLoop
        (local.set $qv (v128.load (i32.add (local.get $q) (local.get $c))))
        (local.set $dyv (v128.load (i32.add (local.get $dy) (local.get $c))))
        (local.set $at (i32.add (local.get $dq) (local.get $c)))
        (v128.store (local.get $at)
          (f32x4.add
            (f32x4.add (v128.load (local.get $at))
              (f32x4.add
                (f32x4.mul (local.get $s0) (v128.load (i32.add (i32.add (local.get $k) (local.get $o0)) (local.get $c))))
                (f32x4.mul (local.get $s1) (v128.load (i32.add (i32.add (local.get $k) (local.get $o1)) (local.get $c))))))
            (f32x4.add
              (f32x4.mul (local.get $s2) (v128.load (i32.add (i32.add (local.get $k) (local.get $o2)) (local.get $c))))
              (f32x4.mul (local.get $s3) (v128.load (i32.add (i32.add (local.get $k) (local.get $o3)) (local.get $c)))))))
        (local.set $at (i32.add (i32.add (local.get $dk) (local.get $o0)) (local.get $c)))
        (v128.store (local.get $at) (f32x4.add (v128.load (local.get $at)) (f32x4.mul (local.get $s0) (local.get $qv))))
        (local.set $at (i32.add (i32.add (local.get $dk) (local.get $o1)) (local.get $c)))
        (v128.store (local.get $at) (f32x4.add (v128.load (local.get $at)) (f32x4.mul (local.get $s1) (local.get $qv))))
        (local.set $at (i32.add (i32.add (local.get $dk) (local.get $o2)) (local.get $c)))
        (v128.store (local.get $at) (f32x4.add (v128.load (local.get $at)) (f32x4.mul (local.get $s2) (local.get $qv))))
        (local.set $at (i32.add (i32.add (local.get $dk) (local.get $o3)) (local.get $c)))
        (v128.store (local.get $at) (f32x4.add (v128.load (local.get $at)) (f32x4.mul (local.get $s3) (local.get $qv))))
        (local.set $at (i32.add (i32.add (local.get $dv) (local.get $o0)) (local.get $c)))
        (v128.store (local.get $at) (f32x4.add (v128.load (local.get $at)) (f32x4.mul (local.get $p0) (local.get $dyv))))
        (local.set $at (i32.add (i32.add (local.get $dv) (local.get $o1)) (local.get $c)))
        (v128.store (local.get $at) (f32x4.add (v128.load (local.get $at)) (f32x4.mul (local.get $p1) (local.get $dyv))))
        (local.set $at (i32.add (i32.add (local.get $dv) (local.get $o2)) (local.get $c)))
        (v128.store (local.get $at) (f32x4.add (v128.load (local.get $at)) (f32x4.mul (local.get $p2) (local.get $dyv))))
        (local.set $at (i32.add (i32.add (local.get $dv) (local.get $o3)) (local.get $c)))
        (v128.store (local.get $at) (f32x4.add (v128.load (local.get $at)) (f32x4.mul (local.get $p3) (local.get $dyv))))
        (local.set $c (i32.add (local.get $c) (i32.const 16)))
        (br_if $cLoop (i32.lt_u (local.get $c) (local.get $hdBytes))))
      (local.set $j (i32.add (local.get $j) (i32.const 4)))
      (br_if $jLoop (i32.lt_u (local.get $j) (local.get $n)))))

  ;; S[bh, i, j] = scale · q_i·k_j for j ≤ i, −1e9 (masked) for i < j < Tp
  (func (export "scores")
    (param $qkv i32) (param $S i32) (param $B i32) (param $T i32) (param $H i32) (param $hd i32) (param $scale f32)
    (local $b i32) (local $h i32) (local $i i32) (local $j i32) (local $Tp i32) (local $last i32)
    (local $hdBytes i32) (local $rowBytes i32) (local $q i32) (local $k i32) (local $s i32) (local $sc v128)
    (local.set $hdBytes (i32.shl (local.get $hd) (i32.const 2)))
    (local.set $rowBytes (i32.mul (i32.mul (local.get $H) (local.get $hdBytes)) (i32.const 3)))
    (local.set $Tp (i32.and (i32.add (local.get $T) (i32.const 3)) (i32.const -4)))
    (local.set $last (i32.sub (local.get $T) (i32.const 1)))
    (local.set $sc (f32x4.splat (local.get $scale)))
    (local.set $s (local.get $S))
    (local.set $b (i32.const 0))
    (block $bEnd (loop $bLoop
      (br_if $bEnd (i32.ge_u (local.get $b) (local.get $B)))
      (local.set $h (i32.const 0))
      (block $hEnd (loop $hLoop
        (br_if $hEnd (i32.ge_u (local.get $h) (local.get $H)))
        ;; this channel's q rows, and its k rows d columns further
        (local.set $q (i32.add (local.get $qkv)
          (i32.add (i32.mul (i32.mul (local.get $b) (local.get $T)) (local.get $rowBytes)) (i32.mul (local.get $h) (local.get $hdBytes)))))
        (local.set $k (i32.add (local.get $q) (i32.div_u (local.get $rowBytes) (i32.const 3))))
        (local.set $i (i32.const 0))
        (block $iEnd (loop $iLoop
          (br_if $iEnd (i32.ge_u (local.get $i) (local.get $T)))
          (call $dotRow (local.get $q) (local.get $k) (local.get $s) (i32.add (local.get $i) (i32.const 1)) (local.get $sc)
            (local.get $last) (local.get $rowBytes) (local.get $hdBytes))
          (local.set $j (i32.add (local.get $i) (i32.const 1)))
          (block $mEnd (loop $mLoop
            (br_if $mEnd (i32.ge_u (local.get $j) (local.get $Tp)))
            (f32.store (i32.add (local.get $s) (i32.shl (local.get $j) (i32.const 2))) (f32.const -1e9))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $mLoop)))
          (local.set $q (i32.add (local.get $q) (local.get $rowBytes)))
          (local.set $s (i32.add (local.get $s) (i32.shl (local.get $Tp) (i32.const 2))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $iLoop)))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $hLoop)))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $bLoop))))

  ;; y_i = Σ_{j ≤ i} P[bh, i, j] · v_j
  (func (export "mix")
    (param $qkv i32) (param $P i32) (param $y i32) (param $B i32) (param $T i32) (param $H i32) (param $hd i32)
    (local $b i32) (local $h i32) (local $i i32) (local $j i32) (local $Tp i32) (local $last i32)
    (local $hdBytes i32) (local $dBytes i32) (local $rowBytes i32) (local $v i32) (local $p i32) (local $out i32)
    (local.set $hdBytes (i32.shl (local.get $hd) (i32.const 2)))
    (local.set $dBytes (i32.mul (local.get $H) (local.get $hdBytes)))
    (local.set $rowBytes (i32.mul (local.get $dBytes) (i32.const 3)))
    (local.set $Tp (i32.and (i32.add (local.get $T) (i32.const 3)) (i32.const -4)))
    (local.set $last (i32.sub (local.get $T) (i32.const 1)))
    (memory.fill (local.get $y) (i32.const 0) (i32.mul (i32.mul (local.get $B) (local.get $T)) (local.get $dBytes)))
    (local.set $p (local.get $P))
    (local.set $b (i32.const 0))
    (block $bEnd (loop $bLoop
      (br_if $bEnd (i32.ge_u (local.get $b) (local.get $B)))
      (local.set $h (i32.const 0))
      (block $hEnd (loop $hLoop
        (br_if $hEnd (i32.ge_u (local.get $h) (local.get $H)))
        (local.set $v (i32.add (local.get $qkv)
          (i32.add (i32.mul (i32.mul (local.get $b) (local.get $T)) (local.get $rowBytes))
            (i32.add (i32.shl (local.get $dBytes) (i32.const 1)) (i32.mul (local.get $h) (local.get $hdBytes))))))
        (local.set $out (i32.add (local.get $y)
          (i32.add (i32.mul (i32.mul (local.get $b) (local.get $T)) (local.get $dBytes)) (i32.mul (local.get $h) (local.get $hdBytes)))))
        (local.set $i (i32.const 0))
        (block $iEnd (loop $iLoop
          (br_if $iEnd (i32.ge_u (local.get $i) (local.get $T)))
          (call $mixRow (local.get $out) (local.get $p) (local.get $v) (i32.add (local.get $i) (i32.const 1))
            (local.get $last) (local.get $rowBytes) (local.get $hdBytes))
          (local.set $out (i32.add (local.get $out) (local.get $dBytes)))
          (local.set $p (i32.add (local.get $p) (i32.shl (local.get $Tp) (i32.const 2))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $iLoop)))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $hLoop)))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $bLoop))))

  ;; Gradients of y = mix(softmax(scores)) into dqkv. Per query row i, with dP_ij = dy_i·v_j:
  ;;   dS_ij = scale · P_ij (dP_ij − Σ_j' P_ij' dP_ij')   (softmax backward, and the score scale)
  ;;   dq_i = Σ_j dS_ij k_j,   dk_j += dS_ij q_i,   dv_j += P_ij dy_i
  ;; `dpRow` is scratch for one row of dP (Tp floats).
  (func (export "backward")
    (param $qkv i32) (param $P i32) (param $dy i32) (param $dqkv i32) (param $dpRow i32)
    (param $B i32) (param $T i32) (param $H i32) (param $hd i32) (param $scale f32)
    (local $b i32) (local $h i32) (local $i i32) (local $j i32) (local $Tp i32) (local $last i32)
    (local $hdBytes i32) (local $dBytes i32) (local $rowBytes i32) (local $p i32)
    (local $q i32) (local $dyRow i32) (local $dq i32) (local $k i32) (local $dk i32) (local $v i32) (local $dv i32)
    (local $at i32) (local $sum v128) (local $sc v128)
    (local.set $hdBytes (i32.shl (local.get $hd) (i32.const 2)))
    (local.set $dBytes (i32.mul (local.get $H) (local.get $hdBytes)))
    (local.set $rowBytes (i32.mul (local.get $dBytes) (i32.const 3)))
    (local.set $Tp (i32.and (i32.add (local.get $T) (i32.const 3)) (i32.const -4)))
    (local.set $last (i32.sub (local.get $T) (i32.const 1)))
    (local.set $sc (f32x4.splat (local.get $scale)))
    (memory.fill (local.get $dqkv) (i32.const 0) (i32.mul (i32.mul (local.get $B) (local.get $T)) (local.get $rowBytes)))
    (local.set $p (local.get $P))
    (local.set $b (i32.const 0))
    (block $bEnd (loop $bLoop
      (br_if $bEnd (i32.ge_u (local.get $b) (local.get $B)))
      (local.set $h (i32.const 0))
      (block $hEnd (loop $hLoop
        (br_if $hEnd (i32.ge_u (local.get $h) (local.get $H)))
        ;; this channel's row 0 of q, k, v (in qkv) and of dq, dk, dv (in dqkv), and of dy
        (local.set $q (i32.add (i32.mul (i32.mul (local.get $b) (local.get $T)) (local.get $rowBytes)) (i32.mul (local.get $h) (local.get $hdBytes))))
        (local.set $dq (i32.add (local.get $dqkv) (local.get $q)))
        (local.set $dk (i32.add (local.get $dq) (local.get $dBytes)))
        (local.set $dv (i32.add (local.get $dk) (local.get $dBytes)))
        (local.set $q (i32.add (local.get $qkv) (local.get $q)))
        (local.set $k (i32.add (local.get $q) (local.get $dBytes)))
        (local.set $v (i32.add (local.get $k) (local.get $dBytes)))
        (local.set $dyRow (i32.add (local.get $dy)
          (i32.add (i32.mul (i32.mul (local.get $b) (local.get $T)) (local.get $dBytes)) (i32.mul (local.get $h) (local.get $hdBytes)))))
        (local.set $i (i32.const 0))
        (block $iEnd (loop $iLoop
          (br_if $iEnd (i32.ge_u (local.get $i) (local.get $T)))
          ;; dP_ij for keys j ≤ i into dpRow, then dS_ij in its place
          (call $dotRow (local.get $dyRow) (local.get $v) (local.get $dpRow) (i32.add (local.get $i) (i32.const 1)) (v128.const f32x4 1 1 1 1)
            (local.get $last) (local.get $rowBytes) (local.get $hdBytes))
          (local.set $sum (v128.const f32x4 0 0 0 0))
          (local.set $j (i32.const 0))
          (loop $sumLoop
            (local.set $sum (f32x4.add (local.get $sum)
              (f32x4.mul (v128.load (i32.add (local.get $dpRow) (i32.shl (local.get $j) (i32.const 2))))
                (v128.load (i32.add (local.get $p) (i32.shl (local.get $j) (i32.const 2)))))))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br_if $sumLoop (i32.le_u (local.get $j) (local.get $i))))
          (local.set $sum (f32x4.splat (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $sum)) (f32x4.extract_lane 1 (local.get $sum)))
            (f32.add (f32x4.extract_lane 2 (local.get $sum)) (f32x4.extract_lane 3 (local.get $sum))))))
          (local.set $j (i32.const 0))
          (loop $dsLoop
            (local.set $at (i32.add (local.get $dpRow) (i32.shl (local.get $j) (i32.const 2))))
            (v128.store (local.get $at) (f32x4.mul (local.get $sc)
              (f32x4.mul (v128.load (i32.add (local.get $p) (i32.shl (local.get $j) (i32.const 2))))
                (f32x4.sub (v128.load (local.get $at)) (local.get $sum)))))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br_if $dsLoop (i32.le_u (local.get $j) (local.get $i))))
          (call $gradRow (local.get $q) (local.get $dyRow) (local.get $dq) (local.get $k) (local.get $dk) (local.get $dv)
            (local.get $dpRow) (local.get $p) (i32.add (local.get $i) (i32.const 1)) (local.get $last) (local.get $rowBytes) (local.get $hdBytes))
          (local.set $q (i32.add (local.get $q) (local.get $rowBytes)))
          (local.set $dq (i32.add (local.get $dq) (local.get $rowBytes)))
          (local.set $dyRow (i32.add (local.get $dyRow) (local.get $dBytes)))
          (local.set $p (i32.add (local.get $p) (i32.shl (local.get $Tp) (i32.const 2))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $iLoop)))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $hLoop)))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $bLoop))))
)
