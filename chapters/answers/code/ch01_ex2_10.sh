# ch01 exercise 2: the wider and the narrower MLP at 10 epochs (the default recipe).
cd "$(dirname "$0")/../../.."   # the repository root
for args in "--hidden 512,256 --epochs 10" "--hidden 64 --epochs 10"; do
  echo "### uptime: $(uptime)"
  echo "### build/bin/train_mnist $args | grep -v '\['"
  nice -n 10 build/bin/train_mnist $args | grep -v '\['
done
echo "### done $(uptime)"
