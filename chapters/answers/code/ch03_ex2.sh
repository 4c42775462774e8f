# ch03 exercise 2: resume after epoch 1 with parts of the checkpoint left out (TT_RESUME_SKIP, from tt.patch).
# TM: train_mnist built from a scratch copy of the repository with chapters/answers/code/tt.patch applied
TM=${TM:?set TM to the scratch build of train_mnist, e.g. TM=/tmp/tt-scratch/build/bin/train_mnist}
A="--limit 4000 --epochs 2"
f() { grep -E '^(epoch [0-9]+/[0-9]+ loss|ANSWERS|resumed)' | sed 's/ samples\/s=.*//'; }
echo "### $TM $A   (uninterrupted)"; $TM $A | f
rm -f /tmp/B.tt; $TM $A --save /tmp/B.tt --stop-after 1 | f
cp /tmp/B.tt /tmp/B1.tt
for skip in "" optimizer scheduler "optimizer,scheduler" loader default model; do
  cp /tmp/B1.tt /tmp/B.tt
  echo "### TT_RESUME_SKIP=$skip $TM $A --resume /tmp/B.tt"; TT_RESUME_SKIP=$skip $TM $A --resume /tmp/B.tt | f
done
