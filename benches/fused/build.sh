#!/usr/bin/env bash
# Compiles the all-gather + GEMM benchmark variants on this (CPU) machine,
# into $OUT (default build/bench/fused), for the GPU machine to run:
#
#   <OUT>/<M>x<K>x<N>_w<W>/<style>_c<chunks>/   fused kernel, fixed chunk count
#   <OUT>/<M>x<K>x<N>_w<W>/<style>_auto/        fused kernel, chunks(auto)
#   <OUT>/<M>x<K>x<N>_w<W>/<style>_local/       the local GEMM alone (no plan)
#
# each with the cubin, its launch manifest and variant.json.
#
# Usage: build.sh [--op ag|rs|rsg|ar|ar2|arg] [--out-chunks "2 4 auto"] [--rs-mode push|pull|stage|copy_engine|auto] [--shapes "M,K,N[@BM,BN,BK,WARPS] ..."] [--styles "grid2d grouped persistent persistent_tma"]
#                 [--chunks "1 2 4 8 16"] [--world W] [--no-auto] [--no-local]
#                 [--backend copy_engine|ldst|tma] [--copy-programs C] [--num-sms N] [--written-out pull|push]
#                 [--algorithm direct|ring]
#                 [--block BM,BN,BK] [--warps W] [--stages S] [--trace]
#
# With --backend ldst, variant directories are named <style>_ldst_c<n>.
# --written-out pull|push (all-gather, fixed chunk counts) writes the plan
# out as chunk.transfer ops instead of chunk.all_gather, with rank maps a
# person would write and chunk-expand-collectives does not: pull, each rank
# fetches rank (r - k) mod W's chunks, k = 1 .. W-1 (the backend's, copy
# engine or ldst; ldst lowers the maps into the copy programs' own index
# arithmetic); push (copy engine), each chunk is written from its source's
# side, `on (r) -> (r)` to `on (r) -> ((r + k) mod W)`. Directories
# <style>[_ldst]_<pull|push>-written_c<n>; backend label <backend>_written.
# --algorithm ring (all-gather) has each rank forward the chunks it
# received to rank r + 1 instead of every rank sending its own to every
# peer; directories <style>[_ldst]_ring_c<n>, backend label <backend>_ring.
# --op rsg builds the reduce-scatter computed from gathered operands
# (examples/gemm_rs/plan-gather.mlir, kernel matmul_kernel_sources, style
# grouped, tiles column-block-major: GROUP_M = every row tile of the rank's
# M/W rows; --chunks counts B's column chunks, A moves in one chunk;
# directories rsg_<M>x<K>x<N>_w<W>/grouped_c<n>, and grouped_auto with
# chunks(auto) on both operands; no local variant).
# --op arg builds the all-reduce computed from gathered operands (the rsg
# plan, plus C [M, N] bound to the kernel's output, produced by column
# tiles and all-gathered by column chunks: chunk-fuse-gathers); --out-chunks
# "1 2 4 auto" are C's column-chunk counts (default "2 4 auto"; auto:
# chunk-select-chunk-size); directories arg_<M>x<K>x<N>_w<W>/grouped_c<n>_o<m>
# (B in n chunks, C in m).
# --op rs builds GEMM + reduce-scatter instead (A [M, K] and B [K, N] per
# rank, K the per-rank K; C [M/W, N]): shape directories rs_<M>x<K>x<N>_w<W>,
# backend ldst (the only one that reduces), default shapes the issue's;
# --rs-mode pull (rs, ar2) builds chunk-fuse-reductions{mode=pull} instead
# of push (directories <style>_pull_c<n>, backend label ldst_pull); --rs-mode copy_engine has the host's side
# stream move the partials (backend copy_engine; directories
# <style>_copy_engine_c<n>); --rs-mode stage (rs, ar2) stages the partials
# like the copy engine but has C = --copy-programs SM programs of the
# kernel move them (chunk-fuse-reductions{mode=stage}; directories
# <style>_stage_c<n>, label ldst_stage; persistent styles get 132 - C
# compute programs unless --num-sms says otherwise, so that every program
# is resident). --op ar builds GEMM + one-shot
# all-reduce (C [M, N]; directories ar_<M>x<K>x<N>_w<W>; M = 1024 shapes);
# --op ar2 the two-shot all-reduce (the reduce-scatter shapes; --rs-mode
# copy_engine: moved by the copy engine, directories <style>_copy_engine_c<n>).
# --rs-mode auto (rs, ar2): backend(auto), chunk-select-backend picks
# (directories <style>_auto-backend_c<n>). --rs-mode tma (rs, ar2): staged
# as with stage, the copy programs' copies bulk tensor copies (backend
# tma; directories <style>_tma-copies_c<n>). --backend tma (ag): the copy
# programs pull with bulk tensor copies (directories
# <style>_tma-copies_c<n>).
# --trace adds chunk-trace-tiles to the fused variants: the bench then
# writes when every tile of the last timed launch began, waited, published
# and ended ("trace" in its JSON; build them into their own OUT).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="$ROOT/target/release"
OUT="${OUT:-$ROOT/build/bench/fused}"
# A shape may carry its own tiles: M,K,N@BM,BN,BK,WARPS. The N_local = 1024
# shapes have too few 128x256 tiles to fill 132 SMs; their tiles are the
# best of a tune run (cafee20; docs/local-gemm.md). With --world W other
# than 2 and no --shapes, N_local (all-gather) or K_local (reductions) of
# the default shapes is scaled by 2/W (the same layer on more ranks).
SHAPES="1024,4096,7168 1024,8192,14336 1024,8192,1024@64,128,64,4 4096,4096,7168 4096,8192,14336 4096,8192,1024@128,128,64,8 8192,4096,7168 8192,8192,14336 8192,8192,1024@128,128,64,8"
STYLES="grouped"
CHUNKS="1 2 4 8 16"
WORLD=2
AUTO=1
LOCAL=1
BACKEND=copy_engine
COPY_PROGRAMS=16
BM=128 BN=256 BK=64 WARPS=8 STAGES=4 GROUP_M=8 NUM_SMS=132
# persistent_tma pipelines 3 stages unless --stages says otherwise (the
# configuration experiments/local_gemm_sweep.py measured against cuBLAS,
# passes/docs/persistent-tma-fusion.md)
STAGES_SET=0
OP=ag
OUT_CHUNKS="2 4 auto"
RS_MODE=push
SHAPES_SET=0
NUM_SMS_SET=0
TRACE=""
WRITTEN=""
ALGORITHM=direct
while [ $# -gt 0 ]; do
  case "$1" in
    --op) OP="$2"; shift 2 ;;
    --rs-mode) RS_MODE="$2"; shift 2 ;;
    --shapes) SHAPES="$2"; SHAPES_SET=1; shift 2 ;;
    --styles) STYLES="$2"; shift 2 ;;
    --chunks) CHUNKS="$2"; shift 2 ;;
    --out-chunks) OUT_CHUNKS="$2"; shift 2 ;;
    --world) WORLD="$2"; shift 2 ;;
    --no-auto) AUTO=0; shift ;;
    --no-local) LOCAL=0; shift ;;
    --backend) BACKEND="$2"; shift 2 ;;
    --copy-programs) COPY_PROGRAMS="$2"; shift 2 ;;
    --num-sms) NUM_SMS="$2"; NUM_SMS_SET=1; shift 2 ;;
    --block) IFS=, read -r BM BN BK <<<"$2"; shift 2 ;;
    --warps) WARPS="$2"; shift 2 ;;
    --stages) STAGES="$2"; STAGES_SET=1; shift 2 ;;
    --trace) TRACE="chunk-trace-tiles,"; shift ;;
    --written-out) WRITTEN="$2"; shift 2 ;;
    --algorithm) ALGORITHM="$2"; shift 2 ;;
    *) echo "build.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case $OP in
  ag) ;;
  ar)
    # One-shot all-reduce at decode size: every tile waits for the peer's
    # same chunk, so a row of tiles runs together (GROUP_M = 1).
    BACKEND=ldst
    GROUP_M=1
    [ "$SHAPES_SET" = 1 ] || SHAPES="1024,7168,4096 1024,14336,8192 1024,1024,8192"
    ;;
  ar2)
    # Two-shot all-reduce (reduce-scatter, then the owners push the sums;
    # with --rs-mode copy_engine the host's side stream moves both).
    BACKEND=ldst
    [ "$RS_MODE" = copy_engine ] && BACKEND=copy_engine
    [ "$RS_MODE" = auto ] && BACKEND=auto
    [ "$RS_MODE" = tma ] && BACKEND=tma
    [ "$SHAPES_SET" = 1 ] || SHAPES="1024,7168,4096 1024,14336,8192 1024,1024,8192 4096,7168,4096 4096,14336,8192 4096,1024,8192 8192,7168,4096 8192,14336,8192 8192,1024,8192"
    ;;
  rs)
    BACKEND=ldst
    if [ "$RS_MODE" = copy_engine ]; then
      # The host's side stream moves the partials.
      BACKEND=copy_engine
    fi
    # chunk-select-backend picks one of the two per shape.
    [ "$RS_MODE" = auto ] && BACKEND=auto
    [ "$RS_MODE" = tma ] && BACKEND=tma
    [ "$SHAPES_SET" = 1 ] || SHAPES="1024,7168,4096 1024,14336,8192 1024,1024,8192 4096,7168,4096 4096,14336,8192 4096,1024,8192 8192,7168,4096 8192,14336,8192 8192,1024,8192"
    ;;
  rsg | arg)
    LOCAL=0
    STYLES=grouped
    [ "$SHAPES_SET" = 1 ] || SHAPES="4096,1024,8192 8192,1024,8192"
    ;;
  *) echo "build.sh: --op is ag, rs, rsg, arg, ar or ar2, not $OP" >&2; exit 2 ;;
esac
case "$WRITTEN" in
  "") ;;
  pull | push)
    if [ "$OP" != ag ] || [ "$AUTO" = 1 ]; then
      echo "build.sh: --written-out is for --op ag with fixed chunk counts (add --no-auto)" >&2
      exit 2
    fi
    if [ "$WRITTEN" = push ] && { [ "$BACKEND" = ldst ] || [ "$BACKEND" = tma ]; }; then
      echo "build.sh: --written-out push is for the copy engine (copy programs load into their own rank)" >&2
      exit 2
    fi
    ;;
  *) echo "build.sh: --written-out is pull or push, not $WRITTEN" >&2; exit 2 ;;
esac
case "$ALGORITHM" in
  direct) ;;
  ring)
    if [ "$OP" != ag ] || [ -n "$WRITTEN" ]; then
      echo "build.sh: --algorithm ring is for --op ag (not --written-out)" >&2
      exit 2
    fi
    ;;
  *) echo "build.sh: --algorithm is direct or ring, not $ALGORITHM" >&2; exit 2 ;;
esac
if [ "$RS_MODE" = stage ] || [ "$RS_MODE" = tma ]; then
  if [ "$OP" != rs ] && [ "$OP" != ar2 ]; then
    echo "build.sh: --rs-mode $RS_MODE is for --op rs or ar2" >&2
    exit 2
  fi
  # Copy programs come first and spin until their chunks are done: the
  # GEMM's programs must not wait for an SM behind them.
  [ "$NUM_SMS_SET" = 1 ] || NUM_SMS=$((132 - COPY_PROGRAMS))
fi
# chunk-fuse-reductions' transport option (the copy engine is the plan's backend).
FUSE_MODE=$RS_MODE
{ [ "$RS_MODE" = copy_engine ] || [ "$RS_MODE" = auto ]; } && FUSE_MODE=push
[ "$RS_MODE" = tma ] && FUSE_MODE=stage
# The backend and the reduction mode as directory names give them (not
# `<style>_tma`: persistent_tma is a kernel style).
BACKEND_TAG=$BACKEND RS_TAG=$RS_MODE
[ "$BACKEND" = tma ] && BACKEND_TAG=tma-copies
[ "$RS_MODE" = tma ] && RS_TAG=tma-copies
# The backend as the results name it.
LABEL=$BACKEND
[ -n "$WRITTEN" ] && LABEL="${BACKEND}_written"
ALGORITHM_CLAUSE=""
[ "$ALGORITHM" = ring ] && LABEL="${BACKEND}_ring" && ALGORITHM_CLAUSE=" algorithm(ring)"
{ [ "$OP" = rs ] || [ "$OP" = ar2 ]; } && { [ "$RS_MODE" = pull ] || [ "$RS_MODE" = stage ]; } && LABEL="${BACKEND}_$RS_MODE"
mkdir -p "$OUT"
# Specialised as Triton's JIT would for contiguous, 16-aligned operands:
# unit strides are constants, everything else is a multiple of 16.
SIG='*bf16,*bf16,*bf16,i32,i32,i32,i32,i32,i32'
SPECIALISE=(--constexpr stride_ak=1 --constexpr stride_bn=1 --constexpr stride_cn=1
  --divisible a_ptr,b_ptr,c_ptr,M,N,K,stride_am,stride_bk,stride_cm)
declare -A KERNEL=([grid2d]=matmul_kernel [grouped]=matmul_kernel_grouped [persistent]=matmul_kernel_persistent
  [persistent_tma]=matmul_kernel_persistent_tma)
# The kernel of a style, imported once per GROUP_M (echoes its path). The
# swizzle group must not span more row tiles than a rank's block, or tiles
# of the rank's rows and of its peers' rows interleave in dispatch order.
kernel_for() { # style group_m (tiles: BM BN BK)
  local style=$1 group=$2 file="$OUT/$1_${BM}x${BN}x${BK}_g$2.mlir" extra=() name=${KERNEL[$1]}
  if [ "$OP" = rsg ] || [ "$OP" = arg ]; then
    name=matmul_kernel_sources
    file="$OUT/sources_${BM}x${BN}x${BK}_g$2_w$WORLD.mlir"
    extra=(--constexpr SOURCES=$WORLD)
  fi
  case $style in
    grouped) extra+=(--constexpr GROUP_M=$group) ;;
    persistent | persistent_tma)
      # The kernel strides over tiles by NUM_SMS, which must be the grid
      # it is launched with (builds into one OUT may differ in it).
      file="$OUT/$1_${BM}x${BN}x${BK}_g$2_sms$NUM_SMS.mlir"
      extra=(--constexpr GROUP_M=$group --constexpr NUM_SMS=$NUM_SMS) ;;
  esac
  if [ ! -f "$file" ]; then
    "$BIN/synco" import "$ROOT/examples/ag_gemm/matmul.py" --kernel "$name" --signature "$SIG" \
      --constexpr BLOCK_M=$BM --constexpr BLOCK_N=$BN --constexpr BLOCK_K=$BK "${extra[@]}" "${SPECIALISE[@]}" \
      -o "$file" >&2
  fi
  echo "$file"
}

stages_for() { # style
  if [ "$1" = persistent_tma ] && [ "$STAGES_SET" = 0 ]; then echo 3; else echo "$STAGES"; fi
}

variant() { # dir style chunks auto fused m k n [out_chunks]
  cat >"$1/variant.json" <<JSON
{"op": "$OP", "style": "$2", "backend": "$LABEL", "chunks": $3, "auto": $4, "fused": $5, "block_m": $BM, "block_n": $BN,
 "num_sms": $NUM_SMS, "m": $6, "k": $7, "n": $8, "world": $WORLD, "out_chunks": ${9:-null}}
JSON
}

DEFAULT_TILES="$BM,$BN,$BK,$WARPS"
# Variant directories are named by shape alone: the same shape twice (say,
# with other tiles) would overwrite the first one's variants.
seen=" "
for shape in $SHAPES; do
  case "$seen" in *" ${shape%@*} "*)
    echo "build.sh: shape ${shape%@*} is given twice; build its other tiles into another OUT" >&2; exit 2 ;;
  esac
  seen="$seen${shape%@*} "
done
for shape in $SHAPES; do
  tiles=$DEFAULT_TILES
  case $shape in *@*) tiles=${shape#*@}; shape=${shape%@*} ;; esac
  IFS=, read -r BM BN BK WARPS <<<"$tiles"
  IFS=, read -r M K N <<<"$shape"
  if [ "$SHAPES_SET" = 0 ] && [ "$WORLD" != 2 ]; then
    # The default shapes are the 2-rank ones: on W ranks each rank holds
    # 2/W of the weight (N_local for all-gather, K_local for reductions).
    if [ "$OP" = ag ]; then N=$((N * 2 / WORLD)); else K=$((K * 2 / WORLD)); fi
  fi
  dir="$OUT/${M}x${K}x${N}_w${WORLD}"
  [ "$OP" != ag ] && dir="$OUT/${OP}_${M}x${K}x${N}_w${WORLD}"
  mkdir -p "$dir"
  counts=""
  for c in $CHUNKS; do counts="$counts $c"; done
  [ "$AUTO" = 1 ] && counts="$counts auto"
  group=$((M / WORLD / BM))
  # Gathered operands: column-block-major tiles (B's chunks are columns).
  [ "$group" -gt "$GROUP_M" ] && [ "$OP" != rsg ] && [ "$OP" != arg ] && group=$GROUP_M
  [ "$group" -lt 1 ] && group=1
  for style in $STYLES; do
    outs=1
    [ "$OP" = arg ] && outs=$OUT_CHUNKS
    for c in $counts; do
    for o in $outs; do
      block=$((M / WORLD))
      if [ "$OP" = arg ] && [ "$o" != auto ] && { [ $((N % o)) -ne 0 ] || [ $(((N / o) % BN)) -ne 0 ]; }; then
        continue # C's column chunks must hold whole tiles
      fi
      if [ "$OP" = rsg ] || [ "$OP" = arg ]; then
        if [ "$c" != auto ] && { [ $((N % c)) -ne 0 ] || [ $(((N / c) % BN)) -ne 0 ]; }; then
          continue # column chunks must hold whole tiles
        fi
      elif [ "$c" != auto ] && { [ $((block % c)) -ne 0 ] || [ $(((block / c) % BM)) -ne 0 ]; }; then
        continue # chunks must hold whole tiles
      fi
      # A reduction's chunks must hold whole swizzle groups
      # (chunk-reorder-tiles refuses the rest: they can deadlock), so finer
      # chunks get a smaller GROUP_M.
      g=$group
      if { [ "$OP" = rs ] || [ "$OP" = ar2 ]; } && [ "$c" != auto ]; then
        while [ $((block / c / BM % g)) -ne 0 ]; do g=$((g / 2)); done
      fi
      kernel=$(kernel_for "$style" "$g")
      plan="$dir/plan_${BACKEND}_$c.mlir"
      [ "$OP" = arg ] && plan="$dir/plan_${BACKEND}_${c}_o$o.mlir"
      [ "$ALGORITHM" = ring ] && plan="$dir/plan_${BACKEND}_ring_$c.mlir"
      if [ "$OP" = ar ] || [ "$OP" = ar2 ]; then
        algorithm=one_shot
        [ "$OP" = ar2 ] && algorithm=two_shot
        cat >"$plan" <<PLAN
chunk.plan @gemm_$OP world_size($WORLD) {
  chunk.buffer @P : !chunk.buffer<${M}x${N}xbf16> bind(2)
  chunk.buffer @C : !chunk.buffer<${M}x${N}xbf16>
  chunk.produce @tiles @P dim(0) tile($BM) index("pid_m")
  chunk.all_reduce @P into @C dim(0) chunks($c) backend($BACKEND) algorithm($algorithm)
}
PLAN
      elif [ "$OP" = rsg ] || [ "$OP" = arg ]; then
        a_chunks=1
        [ "$c" = auto ] && a_chunks=auto
        output=""
        [ "$OP" = arg ] && output="
  chunk.buffer @C : !chunk.buffer<${M}x${N}xbf16> bind(2)
  chunk.produce @tiles @C dim(1) tile($BN) index(\"pid_n\")
  chunk.all_gather @C dim(0) chunks($o) split(1)"
        cat >"$plan" <<PLAN
chunk.plan @gemm_${OP%g}_gather world_size($WORLD) {
  chunk.buffer @A : !chunk.buffer<${M}x${K}xbf16>
  chunk.buffer @Ag : !chunk.buffer<${M}x${K}xbf16> bind(0)
  chunk.buffer @Bg : !chunk.buffer<$((WORLD * K))x${N}xbf16> bind(1)
  chunk.all_to_all @A into @Ag dim(0) chunks($a_chunks)
  chunk.all_gather @Bg dim(0) chunks($c) split(1)
  chunk.consume @Ag dim(0) tile($BM) index("pid_m") source("src")
  chunk.consume @Bg dim(1) tile($BN) index("pid_n") source("src")$output
}
PLAN
      elif [ "$OP" = rs ]; then
        cat >"$plan" <<PLAN
chunk.plan @gemm_rs world_size($WORLD) {
  chunk.buffer @P : !chunk.buffer<${M}x${N}xbf16> bind(2)
  chunk.buffer @C : !chunk.buffer<${block}x${N}xbf16>
  chunk.produce @tiles @P dim(0) tile($BM) index("pid_m")
  chunk.reduce_scatter @P into @C dim(0) chunks($c) backend($BACKEND)
}
PLAN
      elif [ -n "$WRITTEN" ]; then
        plan="$dir/plan_${BACKEND}_${WRITTEN}-written_$c.mlir"
        rows=$((block / c))
        {
          echo "chunk.plan @ag_gemm world_size($WORLD) {"
          echo "  chunk.buffer @A : !chunk.buffer<${M}x${K}xbf16> bind(0)"
          echo "  chunk.buffer @C : !chunk.buffer<${M}x${N}xbf16> bind(2)"
          order=0
          for k in $(seq 1 $((WORLD - 1))); do
            for i in $(seq 0 $((c - 1))); do
              if [ "$WRITTEN" = pull ]; then
                peer="(r - $k) mod $WORLD"
                box="<@A[(r) -> (($peer) * $block + $((i * rows)), 0)] [$rows, $K]>"
                echo "  chunk.transfer @A_k${k}_c$i pull $BACKEND from $box on (r) -> ($peer) to $box on (r) -> (r) order($order)"
              else
                box="<@A[(r) -> (r * $block + $((i * rows)), 0)] [$rows, $K]>"
                echo "  chunk.transfer @A_k${k}_c$i push $BACKEND from $box on (r) -> (r) to $box on (r) -> ((r + $k) mod $WORLD) order($order)"
              fi
              order=$((order + 1))
            done
          done
          echo "  chunk.consume @A dim(0) tile($BM) index(\"pid_m\")"
          echo "}"
        } >"$plan"
      else
        cat >"$plan" <<PLAN
chunk.plan @ag_gemm world_size($WORLD) {
  chunk.buffer @A : !chunk.buffer<${M}x${K}xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<${M}x${N}xbf16> bind(2)
  chunk.all_gather @A dim(0) chunks($c) backend($BACKEND)$ALGORITHM_CLAUSE
  chunk.consume @A dim(0) tile($BM) index("pid_m")
}
PLAN
      fi
      tag=$style
      [ "$BACKEND" != copy_engine ] && [ "$OP" = ag ] && tag="${style}_$BACKEND_TAG"
      [ -n "$WRITTEN" ] && tag="${tag}_$WRITTEN-written"
      [ "$ALGORITHM" = ring ] && tag="${tag}_ring"
      { [ "$OP" = rs ] || [ "$OP" = ar2 ]; } && [ "$RS_MODE" != push ] && tag="${style}_$RS_TAG"
      [ "$BACKEND" = auto ] && tag="${style}_auto-backend"
      vdir="$dir/${tag}_c$c"
      [ "$c" = auto ] && vdir="$dir/${tag}_auto"
      [ "$OP" = arg ] && vdir="${vdir}_o$o"
      mkdir -p "$vdir"
      if ! log=$("$BIN/synco" compile "$kernel" --plan "$plan" \
        --pass-pipeline="builtin.module(chunk-select-backend,chunk-select-chunk-size,chunk-expand-collectives,chunk-verify-plan,chunk-bind-kernel,chunk-reorder-tiles,chunk-insert-waits,chunk-fuse-reductions{mode=$FUSE_MODE},chunk-fuse-gathers,${TRACE}chunk-lower-transfers{copy-programs=$COPY_PROGRAMS},chunk-carry-pointers,chunk-to-triton)" \
        --emit=cubin --out-dir "$vdir" \
        --num-warps $WARPS --num-stages "$(stages_for "$style")" 2>&1); then
        echo "$log" >&2
        echo "build.sh: compiling $vdir failed" >&2
        exit 1
      fi
      chosen=$c
      if [ "$c" = auto ]; then
        # (rsg: the count of B's column chunks, which the variant records.)
        chosen=$(grep "$({ [ "$OP" = rsg ] || [ "$OP" = arg ]; } && echo 'for @Bg' || echo 'chunks(auto)')" <<<"$log" |
          sed -n 's/.*chunks(auto) -> chunks(\([0-9]*\)).*/\1/p' | head -1)
        echo "$log" | grep 'chunks(auto)' >"$vdir/auto-choice.txt" || true
      fi
      out_chunks=null
      [ "$OP" = arg ] && out_chunks=$o
      if [ "$OP" = arg ] && [ "$o" = auto ]; then
        out_chunks=$(grep 'for @C' <<<"$log" | sed -n 's/.*chunks(auto) -> chunks(\([0-9]*\)).*/\1/p' | head -1)
        echo "$log" | grep 'for @C' >"$vdir/auto-out-choice.txt" || true
      fi
      variant "$vdir" "$style" "${chosen:-null}" "$([ "$c" = auto ] && echo true || echo false)" true "$M" "$K" "$N" "${out_chunks:-null}"
    done
    done
    if [ "$LOCAL" = 1 ]; then
      kernel=$(kernel_for "$style" "$group")
      vdir="$dir/${style}_local"
      mkdir -p "$vdir"
      "$BIN/synco" compile "$kernel" --emit=cubin --out-dir "$vdir" \
        --num-warps $WARPS --num-stages "$(stages_for "$style")" 2>/dev/null
      variant "$vdir" "$style" null false false "$M" "$K" "$N"
    fi
  done
  echo "built $dir: $(ls "$dir" | grep -c _)" >&2
done
