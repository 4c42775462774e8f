// tinytorch/serialization.hpp — checkpoints: tinytorch::save / tinytorch::load for state dicts
// (PyTorch: torch.save(model.state_dict(), path) / model.load_state_dict(torch.load(path))),
// written in the safetensors format, so that PyTorch's ecosystem can read them:
//
//   tinytorch::save(model->state_dict(), "ckpt.safetensors");  // atomically: tmp file, fsync, rename
//   model->load_state_dict(tinytorch::load("ckpt.safetensors"));
//
//   # Python:  from safetensors.torch import load_file; sd = load_file("ckpt.safetensors")
//   #          torch_model.load_state_dict(sd)        (same names as the PyTorch model's state_dict)
//
// With DDP every rank holds the same weights, so rank 0 alone writes and the others wait at a
// barrier before anyone reads the file (chapter 06, 6.13).
// The file: u64 little-endian N, N bytes of JSON ({"name": {"dtype": "F32", "shape": [2, 3],
// "data_offsets": [begin, end]}, ..., "__metadata__": {...}}), then the tensors' bytes, C-ordered,
// little-endian; F32, F64, I64, F16, BF16. save() writes the bytes the reference writer (the Rust
// crate behind safetensors.torch.save_file) writes, plus a CRC-32 per tensor in "__metadata__"
// ("tinytorch.crc32:<name>"), which load() checks. load() checks everything the crate checks
// before it allocates from the file's numbers, each failure a tinytorch::Error naming the file
// and the problem, and also reads tinytorch's TTSD files. Writes are atomic (a temporary file in
// the same directory, fsync, rename); a save killed by SIGKILL leaves a temporary file that the
// next save of that path removes. Every rule, byte and check: docs/checkpoints.md.
// Chapter: chapters/06-distributed-data-parallel.md (6.13, checkpoints).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tinytorch/tensor.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tinytorch/serialization.hpp writes tensor bytes as they are in memory: safetensors needs a little-endian host"
#endif

TT_NAMESPACE_BEGIN

namespace detail {

/// zlib's CRC-32 of `n` bytes at `p` (fed in chunks: zlib's length argument is 32-bit),
/// continuing from `crc` (the CRC of the bytes before; 0 for none, as zlib's crc32(0, Z_NULL, 0)).
TT_DECL uint32_t crc32_of(const char* p, size_t n, uint32_t crc0 = 0);

/// The prefix of every temporary file that write_file_atomically makes for the target whose file
/// name (last path component) is `base`, written by a process of this host:
/// ".<base>.tt_tmp.<host>." (then "<pid>.<n>"). `base` is cut so that the whole name fits in
/// NAME_MAX (255) bytes with a 20-digit pid and counter; two targets whose names agree in their
/// first ~140 bytes therefore share a prefix, which is harmless: only files whose writer is gone
/// are ever removed.
TT_DECL std::string temp_file_prefix(const std::string& base);

/// Writes `data` to `path` atomically: a uniquely named temporary file in the same directory
/// (".<name>.tt_tmp.<host>.<pid>.<n>", created with O_EXCL, so two writers never share one), fsync,
/// rename(2) over `path` (atomic on POSIX file systems). A symbolic link is followed (its target
/// is replaced, as torch.save writes through a link); an existing file keeps its permissions.
/// Before writing, the temporary files of earlier saves of the same target whose process is gone
/// are removed (remove_stale_temp_files): a save killed with SIGKILL leaves its temporary file
/// behind (nothing can run in a killed process), the next save of that file cleans it up.
/// `op` names the caller in messages.
/// Throws tinytorch::Error (and removes the temporary file) if any step fails, if the path
/// contains a NUL byte, or if it names something other than a regular file (a directory, a
/// device: replacing those by a file would be wrong, writing through them is not atomic).
TT_DECL void write_file_atomically(const std::string& path_in, const std::string& data, const char* op);

/// A tensor's integrity digest, as save() writes it and load() checks it: zlib's CRC-32 (the
/// IEEE 802.3 polynomial, Python's zlib.crc32) of the text "<dtype>[<d0>,<d1>,...]" (e.g.
/// "F32[2,3]", "I64[]" for a 0-d tensor) followed by the tensor's data bytes as stored in the
/// file, written as 8 lowercase hex digits. The shape and dtype are included so that a header
/// change that keeps the byte count (shape [2,3] -> [3,2]) is caught too. CRC-32 detects every
/// 1- or 2-bit error and every burst of up to 32 bits in messages of any size a file can hold,
/// and every 3-bit error up to 11 KiB (Koopman, "32-bit cyclic redundancy codes for Internet
/// applications", DSN 2002).
TT_DECL std::string tensor_digest(const std::string& dtype, const std::vector<uint64_t>& shape, const char* data,
                                 size_t bytes);

}  // namespace detail

/// Options of save() (no PyTorch counterpart: torch.save has no integrity check).
struct SaveOptions {
  /// Write a CRC-32 digest of every tensor (its dtype, shape and bytes) into the header's
  /// "__metadata__", under "tinytorch.crc32:<name>", which load() verifies (the top of this file).
  /// false writes exactly what Python's safetensors.torch.save_file writes, byte for byte.
  bool digests = true;
};

/// Options of load().
struct LoadOptions {
  /// Check every tensor against its CRC-32 digest when the file has digests (files written by
  /// other tools have none and load without a check). false skips the check, e.g. to rescue
  /// the other tensors of a damaged checkpoint; the file must still be well formed.
  bool verify = true;
};

/// Writes a state dict (name, tensor pairs, e.g. Module::state_dict()) to `path` atomically, as a
/// safetensors file (top of this file) that Python reads with safetensors.torch.load_file(path),
/// with a CRC-32 digest per tensor in its "__metadata__" (SaveOptions::digests) that load()
/// verifies. Temporary files that an earlier, killed save of `path` left behind are removed.
/// Throws tinytorch::Error naming the file if it cannot be written, and before writing anything
/// if an entry is an undefined tensor, two entries have the same name, or a name is not valid
/// UTF-8 or is "__metadata__" (the format cannot hold those).
TT_DECL void save(const std::vector<std::pair<std::string, Tensor>>& state_dict, const std::string& path,
                 SaveOptions options = {});

/// save() with string metadata, written as the header's "__metadata__" beside the digests
/// (Python: safetensors.torch.save_file(tensors, path, metadata={"format": "pt"}); read back
/// with load_metadata, or safe_open(path, "pt").metadata() in Python, which also lists the
/// "tinytorch.crc32:<name>" digests). Nothing is written for an empty map and no digests.
/// Throws as save(), and if a key or value is not valid UTF-8 or a key starts with
/// "tinytorch.crc32:" (reserved for the digests).
TT_DECL void save(const std::vector<std::pair<std::string, Tensor>>& state_dict, const std::string& path,
                 const std::map<std::string, std::string>& metadata, SaveOptions options = {});

/// Reads a checkpoint: a safetensors file (written by save(), by Python's safetensors, by any
/// other writer; entries returned sorted by name) or a file in tinytorch's older "TTSD" format
/// (entries in file order, checked by its CRC-32). Throws tinytorch::Error naming the file if it
/// cannot be read or is not well formed (the checks at the top of this file), holds a dtype
/// other than F32, F64, I64, or (options.verify, the default) a tensor does not match its
/// CRC-32 digest, lacks one while others have one, or a digest names no tensor: the error names
/// the tensor. Python's safetensors reads such a file without noticing; tinytorch refuses it.
TT_DECL std::vector<std::pair<std::string, Tensor>> load(const std::string& path, LoadOptions options = {});

/// The "__metadata__" of the safetensors file `path` that the writer was given (empty if none;
/// a "TTSD" file has none): without save()'s "tinytorch.crc32:<name>" digests. Validates the
/// whole file as load() does, digests included (unless options.verify is false).
/// Python: safe_open(path, "pt").metadata() (which also shows the digests).
TT_DECL std::map<std::string, std::string> load_metadata(const std::string& path, LoadOptions options = {});

TT_NAMESPACE_END  // namespace tinytorch

#if TT_HEADER_ONLY
#include "tinytorch/serialization.ipp"
#endif
