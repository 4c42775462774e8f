# ch08 exercises (1) and (2): emulated -np N large-batch runs, and warmup length at batch 1024.
cd "$(dirname "$0")/../../.."   # the repository root
run() { echo "### build/bin/train_mnist $*   [$(uptime | sed 's/.*load/load/')]"; nice -n 10 build/bin/train_mnist "$@" | grep -E "^(epoch 1/|epoch 2/|epoch 10/10 loss|test_accuracy|schedule)" | grep -v '\['; }
# (1) -np N emulated in one process: batch 64N, lr 0.02N, warmup 2 epochs from 1/N
run --batch-size 1024 --lr 0.32 --warmup-epochs 2 --warmup-start-factor 0.0625
run --batch-size 1536 --lr 0.48 --warmup-epochs 2 --warmup-start-factor 0.041666666666666664
run --batch-size 2048 --lr 0.64 --warmup-epochs 2 --warmup-start-factor 0.03125
run --batch-size 1280 --lr 0.40 --warmup-epochs 2 --warmup-start-factor 0.05
# (2) batch 1024, warmup 1, 2, 5 (default start factor 0.1 in one process)
run --batch-size 1024 --lr 0.32 --warmup-epochs 1
run --batch-size 1024 --lr 0.32 --warmup-epochs 2
run --batch-size 1024 --lr 0.32 --warmup-epochs 5
echo "### done $(uptime)"
