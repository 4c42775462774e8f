// tinytorch/autograd/dot.hpp — the backward graph of a tensor as Graphviz "dot" text.
//
//   std::string dot = autograd::to_dot(loss, model.named_parameters());
//   // write it to graph.dot, then: dot -Tsvg graph.dot -o graph.svg
//
// Draws what torchviz's make_dot(loss, params=dict(model.named_parameters())) draws for PyTorch:
//   - one grey box per Node reached from t.grad_fn() along next_edges, labelled with its PyTorch
//     class name as torchviz shows it (type(fn).__name__): MseLossBackward0, AddmmBackward0,
//     ReluBackward0, AccumulateGrad (Node::name() is PyTorch's fn.name(), which for the C++-only
//     classes reads "torch::autograd::AccumulateGrad"; the prefix is dropped here, as torchviz);
//   - one light-blue box per leaf behind an AccumulateGrad, labelled "name\n (shape)" with the
//     name from `params` (empty when the leaf is not in it);
//   - one green box for t itself ("output_name\n (shape)");
//   - an arrow from every node to each node that consumes it (input -> consumer: the direction
//     the forward pass ran; backward runs against the arrows). A leaf used twice by one node
//     gives two arrows, as torchviz.
// Node ids are given in the order of a depth-first walk from t.grad_fn() that follows next_edges
// in order (torchviz's order): out, n0 (= t.grad_fn()), n1, ...; a leaf's box is v<k> for the
// AccumulateGrad n<k>. The same graph always gives the same text, so a test can compare it.
// Differences from torchviz: it names nodes by their address (id(fn)), tinytorch by their order;
// it also draws a view output's base (dotted), tinytorch does not. tinytorch's graph itself differs
// where documented in tests/test_autograd.cpp ("grad_fn names match PyTorch's"): nn.Linear's
// AddmmBackward0 takes the weight directly, without PyTorch's TBackward0 in between.
// Chapter: chapters/02-autograd.md. Reference: torchviz (github.com/szagoruyko/pytorchviz) dot.py.
#pragma once

#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tinytorch/functional.hpp"
#include "tinytorch/autograd/node.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN namespace autograd {

namespace dot_detail {
/// "(1, 2)" as torchviz's size_to_str; "()" for a scalar.
inline std::string dot_size(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + ")";
}
/// A dot double-quoted string: " and \ escaped; "\n" passes through as dot's line break; a NUL
/// byte, which Graphviz cannot read inside a string ("syntax error ... scanning a quoted string"),
/// shows as \0.
inline std::string dot_quote(const std::string& s) {
  std::string r = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') r += "\\\"";
    else if (c == '\n') r += "\\n";
    else if (c == '\\') r += "\\\\";
    else if (c == '\0') r += "\\\\0";
    else r += c;
  }
  return r + "\"";
}
/// torchviz's name for a node: PyTorch's class name, without the "torch::autograd::" namespace.
inline std::string dot_node_name(const Node& n) {
  std::string name = n.name();
  const std::string ns = "torch::autograd::";
  return name.compare(0, ns.size(), ns) == 0 ? name.substr(ns.size()) : name;
}
}  // namespace dot_detail

/// The backward graph of `t` as Graphviz dot text (see the top of this file for what is drawn).
/// params: names for leaves, e.g. model.named_parameters(); a leaf not in it gets an empty name.
/// output_name: the first line of t's own box (torchviz leaves it empty).
/// Throws tinytorch::Error for an undefined tensor. A tensor without grad_fn gives a graph of one
/// box. Walks the graph without recursion, so a graph of any depth is fine (but large to draw).
inline std::string to_dot(const Tensor& t, const std::vector<std::pair<std::string, Tensor>>& params = {},
                          const std::string& output_name = "") {
  TT_CHECK(t.defined(), "to_dot: the tensor is undefined");
  std::unordered_map<const TensorImpl*, std::string> param_name;
  for (const auto& [name, p] : params)
    if (p.defined()) param_name.emplace(p.impl(), name);

  // 1. Depth-first pre-order from t.grad_fn(), next_edges in order: every node once.
  std::vector<Node*> order;
  std::unordered_map<const Node*, size_t> id;
  if (Node* root = t.grad_fn().get()) {
    std::vector<std::pair<Node*, size_t>> stack{{root, 0}};
    id[root] = 0;
    order.push_back(root);
    while (!stack.empty()) {
      Node* node = stack.back().first;
      size_t& i = stack.back().second;
      if (i == node->next_edges.size()) {
        stack.pop_back();
        continue;
      }
      Node* child = node->next_edges[i++].fn.get();
      if (!child || id.count(child)) continue;
      id[child] = order.size();
      order.push_back(child);
      stack.push_back({child, 0});
    }
  }

  // 2. The text: t's box, then each node (with its leaf's box) and the arrows into it.
  std::ostringstream out;
  out << "digraph {\n"
      << "\tgraph [size=\"12,12\"]\n"
      << "\tnode [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]\n"
      << "\tout [label=" << dot_detail::dot_quote(output_name + "\n " + dot_detail::dot_size(t.sizes()))
      << " fillcolor=darkolivegreen1]\n";
  if (!order.empty()) out << "\tn0 -> out\n";
  for (size_t k = 0; k < order.size(); ++k) {
    const Node& node = *order[k];
    const std::string nk = "n" + std::to_string(k);
    if (const auto* acc = dynamic_cast<const AccumulateGrad*>(&node)) {
      if (std::shared_ptr<TensorImpl> leaf = acc->leaf.lock()) {
        auto it = param_name.find(leaf.get());
        const std::string name = it == param_name.end() ? "" : it->second;
        out << "\tv" << k << " [label=" << dot_detail::dot_quote(name + "\n " + dot_detail::dot_size(leaf->shape))
            << " fillcolor=lightblue]\n"
            << "\tv" << k << " -> " << nk << "\n";
      }
    }
    out << "\t" << nk << " [label=" << dot_detail::dot_quote(dot_detail::dot_node_name(node)) << "]\n";
    for (const Edge& e : node.next_edges)
      if (e.fn) out << "\tn" << id.at(e.fn.get()) << " -> " << nk << "\n";
  }
  out << "}\n";
  return out.str();
}

}  TT_NAMESPACE_END  // namespace tinytorch::autograd
