# ch01 exercise 2: train_mnist with a wider and a narrower MLP and the CNN, 5 epochs each.
cd "$(dirname "$0")/../../.."   # the repository root
for args in "--hidden 512,256 --epochs 5" "--hidden 64 --epochs 5" "--model cnn --epochs 5"; do
  echo "### uptime: $(uptime)"
  echo "### build/bin/train_mnist $args | grep -v '\['"
  nice -n 10 build/bin/train_mnist $args | grep -v '\['
done
echo "### done $(uptime)"
