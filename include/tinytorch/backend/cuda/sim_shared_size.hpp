// tinytorch/backend/cuda/sim_shared_size.hpp — the bytes of static __shared__ memory a kernel
// declares, told from its function pointer alone, so that the simulator can refuse a launch nvcc
// would refuse (ptxas: "uses too much shared data (0x10000 bytes, 0xc000 max)": over 48 KiB).
// What it implements. detail::static_shared_bytes(kernel): that total, or -1 when it cannot be told.
// How. In the simulator __shared__ is `static thread_local` (sim.hpp): `__shared__ float s[128];` in
// kernel k is emitted as a TLS symbol (STT_TLS) of the ELF symbol table (.symtab), st_size = sizeof s,
// named by the Itanium C++ ABI's <local-name> rule `_ZZ<k's encoding>E<name>[_<discriminator>]`,
// k's encoding being its mangled name minus the "_Z" (an extern "C" kernel's: <length><name>):
//     kernel k   _ZN12_GLOBAL__N_116block_sum_kernelEPKfPfb
//     its s      _ZZN12_GLOBAL__N_116block_sum_kernelEPKfPfbE1s     (another s in a nested block: E1s_0)
// dl_iterate_phdr finds the loaded object whose PT_LOAD segments hold the address (the main
// program's file is /proc/self/exe, a shared library's is dlpi_name); its file is mmap'ed and its
// .symtab read once: for every function symbol (address = st_value + dlpi_addr), the sum of the
// st_size of the TLS symbols named exactly "_ZZ" <encoding> "E" <a digit>..., kept sorted by address.
// A local function (anonymous namespace, `static`) may have one mangled name in many translation
// units; the linker keeps each TU's local symbols together after an STT_FILE symbol, so it counts
// only its own TU's. Where TUs cannot be told apart (strip -g drops the STT_FILE symbols; full LTO
// makes one TU) and a variable's name is found twice, the answer is -1.
// Cost (2-core VM): the first call parses: ~4 ms in tests' test_cuda_sim_suite (-O2, 11 MB, 19k
// functions), ~100 ms in its sanitizer builds (sort and loads at -O0 or instrumented; 230 MB, 68k
// functions); a new kernel then costs ~1 us, a known one ~0.1 us.
// Limits. A stripped program (no .symtab) gives -1, as does an address in no function symbol. Not
// counted: a static __shared__ declared in a __device__ function the kernel calls (ptxas would count
// it: its name carries that function's encoding), one inside a lambda in the kernel (_ZZZ...), and
// one the optimiser deleted (written, never read). ELF of the host's own class (Linux, glibc).
// Reference: System V ABI, "Symbol Table" (st_value, st_size, STT_TLS, STT_FILE); Itanium C++ ABI,
// "Scope Encoding" (<local-name>, discriminators); dl_iterate_phdr(3).
// Chapter: chapters/10-gpu-kernels.md.
#pragma once

#include "tinytorch/core/config.hpp"

#if TINYTORCH_CUDA_SIM  // in a CPU build this header is empty, like sim.hpp

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

TT_NAMESPACE_BEGIN namespace backend::cuda::sim::detail {

/// A static __shared__ variable: its offset in its object's TLS image (st_value) and its bytes.
struct SharedVar {
  std::uint64_t offset, bytes;
};
/// One function symbol of an ELF object: [start, start + size) relative to the load base, and the
/// bytes of its static __shared__ (thread_local) variables (-1: ambiguous) and the variables.
struct ElfFunction {
  std::uint64_t start, size;
  long long shared_bytes;
  std::vector<SharedVar> vars;
};

/// The ElfFunctions of the .symtab of `syms` (names in `strtab`), sorted by start.
inline std::vector<ElfFunction> functions_of(const ElfW(Sym)* syms, std::uint64_t nsyms, const char* strtab,
                                             std::uint64_t strtab_size) {
  // A symbol's name ("" when out of bounds), cut at the first '.': LTO renames a local symbol that
  // another TU's shares (k.lto_priv.0 with g++, k.5 with clang), and mangled names have no '.'.
  auto name_of = [&](const ElfW(Sym)& s) -> std::string_view {
    if (s.st_name >= strtab_size) return {};
    const char* begin = strtab + s.st_name;
    const void* end = std::memchr(begin, '\0', strtab_size - s.st_name);
    if (end == nullptr) return {};
    const std::string_view n(begin, static_cast<std::size_t>(static_cast<const char*>(end) - begin));
    return n.substr(0, n.find('.'));
  };
  // One pass: the TLS "_ZZ..." symbols (name after "_ZZ", size, TU) and the defined functions.
  // TU = the number of STT_FILE symbols seen before a local symbol; -1 for a global one.
  struct Tls { std::string_view rest; std::uint64_t offset, size; long tu; };
  struct Fn { std::string_view name; std::uint64_t start, size; long tu; };
  std::vector<Tls> tls;
  std::vector<Fn> fns;
  long tu = 0;
  for (std::uint64_t i = 1; i < nsyms; ++i) {
    const ElfW(Sym)& s = syms[i];
    const int type = ELF64_ST_TYPE(s.st_info);  // the same bits as ELF32_ST_TYPE
    const long sym_tu = ELF64_ST_BIND(s.st_info) == STB_LOCAL ? tu : -1;
    if (type == STT_FILE) ++tu;
    if (s.st_shndx == SHN_UNDEF) continue;
    const std::string_view n = type == STT_TLS || type == STT_FUNC ? name_of(s) : std::string_view{};
    if (type == STT_TLS && n.size() > 3 && n.compare(0, 3, "_ZZ") == 0)
      tls.push_back({n.substr(3), s.st_value, s.st_size, sym_tu});
    if (type == STT_FUNC) fns.push_back({n, s.st_value, s.st_size, sym_tu});
  }
  std::sort(tls.begin(), tls.end(), [](const Tls& a, const Tls& b) { return a.rest < b.rest; });
  // Each function's sum: the TLS names that start with key = <encoding> "E", then a digit.
  std::vector<ElfFunction> out;
  out.reserve(fns.size());
  std::string key;  // reused: no allocation per function
  for (const Fn& f : fns) {
    long long bytes = 0;
    std::vector<SharedVar> vars;
    if (!tls.empty() && !f.name.empty()) {
      if (f.name.size() > 2 && f.name.compare(0, 2, "_Z") == 0) key.assign(f.name.substr(2));
      else key.assign(std::to_string(f.name.size())).append(f.name);  // C linkage: <source-name>
      key += 'E';
      auto it = std::lower_bound(tls.begin(), tls.end(), key,
                                 [](const Tls& t, const std::string& k) { return t.rest < k; });
      std::string_view last;  // the last name counted: the same name again means two TUs mixed
      for (; bytes >= 0 && it != tls.end() && it->rest.compare(0, key.size(), key) == 0; ++it) {
        if (it->rest.size() <= key.size() || !std::isdigit(static_cast<unsigned char>(it->rest[key.size()])) ||
            (f.tu >= 0 && it->tu >= 0 && it->tu != f.tu))  // a local function: not another TU's locals
          continue;
        bytes = it->rest == last ? -1 : bytes + static_cast<long long>(it->size);
        last = it->rest;
        vars.push_back({it->offset, it->size});
      }
    }
    if (bytes < 0) vars.clear();
    out.push_back({f.start, f.size, bytes, std::move(vars)});
  }
  // By start; among symbols at one address (aliases) the largest sum last, the one looked up.
  std::sort(out.begin(), out.end(), [](const ElfFunction& a, const ElfFunction& b) {
    return a.start != b.start ? a.start < b.start : a.shared_bytes < b.shared_bytes;
  });
  return out;
}

/// Reads the ELF file at `path` (mmap'ed, every offset checked against its size) into `out`. False
/// when it cannot be read, is not an ELF file of the host's class, is malformed, or has no .symtab.
inline bool parse_elf_functions(const char* path, std::vector<ElfFunction>& out) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  void* map = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && st.st_size >= static_cast<off_t>(sizeof(ElfW(Ehdr))))
    map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping stays valid without the descriptor
  if (map == MAP_FAILED) return false;
  const auto* file = static_cast<const unsigned char*>(map);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  // [off, off + n) inside the file, off a multiple of `align`? (no addition here can overflow)
  auto fits = [&](std::uint64_t off, std::uint64_t n, std::uint64_t align) {
    return off <= size && n <= size - off && off % align == 0;
  };
  const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(file);
  const ElfW(Shdr)* sh = nullptr;  // the section header table, when sane
  std::uint64_t shnum = eh->e_shnum;
  const unsigned char host_class = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == host_class &&
      eh->e_shentsize == sizeof(ElfW(Shdr)) && fits(eh->e_shoff, sizeof(ElfW(Shdr)), alignof(ElfW(Shdr)))) {
    sh = reinterpret_cast<const ElfW(Shdr)*>(file + eh->e_shoff);
    if (shnum == 0) shnum = sh[0].sh_size;  // over 0xff00 sections: the count is in section 0
    if (eh->e_shoff == 0 || shnum > size / sizeof(ElfW(Shdr)) || !fits(eh->e_shoff, shnum * sizeof(ElfW(Shdr)), 1))
      sh = nullptr;
  }
  const ElfW(Shdr)* symtab = nullptr;
  for (std::uint64_t i = 0; sh != nullptr && i < shnum; ++i)
    if (sh[i].sh_type == SHT_SYMTAB) symtab = &sh[i];
  bool ok = symtab != nullptr && symtab->sh_entsize == sizeof(ElfW(Sym)) && symtab->sh_link < shnum &&
            fits(symtab->sh_offset, symtab->sh_size, alignof(ElfW(Sym))) &&
            fits(sh[symtab->sh_link].sh_offset, sh[symtab->sh_link].sh_size, 1);
  if (ok) {
    try {
      out = functions_of(reinterpret_cast<const ElfW(Sym)*>(file + symtab->sh_offset),
                         symtab->sh_size / sizeof(ElfW(Sym)),
                         reinterpret_cast<const char*>(file + sh[symtab->sh_link].sh_offset),
                         sh[symtab->sh_link].sh_size);
    } catch (...) {  // std::bad_alloc: cannot be told
      ok = false;
    }
  }
  ::munmap(map, static_cast<size_t>(size));
  return ok;
}

/// The static __shared__ variables of one kernel: their total bytes (-1 when that cannot be told: no
/// .symtab, a stripped program; the address is in no symbol), each one's offset in the TLS image of
/// the object holding the kernel, and that object's TLS module id (0: none).
struct StaticShared {
  long long bytes = -1;
  std::vector<SharedVar> vars;
  std::size_t tls_modid = 0;
};

/// The StaticShared of the kernel at `kernel` (the TLS symbols `_ZZ<its mangled name minus "_Z">E...`
/// of the ELF object holding it). Parsed once per object, cached per kernel until an object is
/// unloaded (dlclose: another library may then hold the same addresses).
inline StaticShared static_shared_of(const void* kernel) noexcept {
  // Never destroyed: a launch from a static destructor still finds it.
  struct State {
    std::mutex mutex;
    std::map<std::pair<std::string, std::uintptr_t>, std::vector<ElfFunction>> objects;  // empty: unreadable
    std::unordered_map<const void*, StaticShared> kernels;
    unsigned long long unloads = 0;  // dl_phdr_info::dlpi_subs when the caches were filled
  };
  static State* const state = new State;
  try {
    std::lock_guard<std::mutex> lock(state->mutex);
    unsigned long long unloads = 0;
    ::dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) -> int {
          *static_cast<unsigned long long*>(data) = info->dlpi_subs;  // the same in every entry
          return 1;
        },
        &unloads);
    if (unloads != state->unloads) {
      state->kernels.clear();
      state->objects.clear();
      state->unloads = unloads;
    }
    const auto known = state->kernels.find(kernel);
    if (known != state->kernels.end()) return known->second;
    // The loaded object whose PT_LOAD segments hold the address: its file and load base (copied
    // into a buffer: nothing in glibc's callback allocates or throws).
    struct Query { std::uintptr_t addr, base; std::size_t tls_modid; char file[4096]; };
    Query q{reinterpret_cast<std::uintptr_t>(kernel), 0, 0, {}};
    ::dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) -> int {
          auto* found = static_cast<Query*>(data);
          for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& p = info->dlpi_phdr[i];
            const std::uintptr_t lo = info->dlpi_addr + p.p_vaddr;
            if (p.p_type == PT_LOAD && found->addr >= lo && found->addr - lo < p.p_memsz) {
              const bool main_program = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
              std::snprintf(found->file, sizeof found->file, "%s", main_program ? "/proc/self/exe" : info->dlpi_name);
              found->base = info->dlpi_addr;
              found->tls_modid = info->dlpi_tls_modid;
              return 1;  // stop
            }
          }
          return 0;
        },
        &q);
    StaticShared result;
    result.tls_modid = q.tls_modid;
    if (q.file[0] != '\0') {
      auto [obj, fresh] = state->objects.try_emplace({q.file, q.base});
      if (fresh && !parse_elf_functions(q.file, obj->second)) obj->second.clear();
      const std::vector<ElfFunction>& fns = obj->second;
      const std::uintptr_t rel = q.addr - q.base;
      // The last function starting at or before the address, if it holds the address.
      const auto it = std::upper_bound(fns.begin(), fns.end(), rel,
                                       [](std::uintptr_t a, const ElfFunction& f) { return a < f.start; });
      if (it != fns.begin() && rel - std::prev(it)->start < std::max<std::uint64_t>(std::prev(it)->size, 1))
      {
        result.bytes = std::prev(it)->shared_bytes;
        result.vars = std::prev(it)->vars;
      }
    }
    return state->kernels.emplace(kernel, std::move(result)).first->second;
  } catch (...) {
    return StaticShared();
  }
}

/// Total bytes of the static __shared__ variables of the kernel at `kernel`, or -1 when unknown.
inline long long static_shared_bytes(const void* kernel) noexcept { return static_shared_of(kernel).bytes; }

#if defined(__x86_64__)
// The C library's TLS accessor (the call the compiler emits for the general-dynamic model): the
// address of byte ti_offset of module ti_module's TLS block in this thread, allocated if needed.
struct TlsIndex {
  unsigned long ti_module, ti_offset;
};
extern "C" void* __tls_get_addr(TlsIndex*);
#endif

/// The calling thread's instance of each static __shared__ variable of `s`: {address, bytes}
/// (empty when there are none, or when its object's TLS block cannot be found in this thread).
inline std::vector<std::pair<unsigned char*, std::size_t>> shared_var_addresses(const StaticShared& s) {
  std::vector<std::pair<unsigned char*, std::size_t>> out;
  if (s.vars.empty() || s.tls_modid == 0) return out;
  struct Query { std::size_t modid; void* tls; std::uint64_t tls_bytes; };
  Query q{s.tls_modid, nullptr, 0};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* found = static_cast<Query*>(data);
        if (info->dlpi_tls_modid != found->modid) return 0;
        found->tls = info->dlpi_tls_data;  // this thread's copy of the object's PT_TLS image
        for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_TLS) found->tls_bytes = info->dlpi_phdr[i].p_memsz;
        return 1;
      },
      &q);
#if defined(__x86_64__)
  if (q.tls == nullptr && q.tls_bytes > 0) {  // a dlopen'ed library this thread has not touched yet
    TlsIndex index{static_cast<unsigned long>(s.tls_modid), 0};
    q.tls = __tls_get_addr(&index);
  }
#endif
  if (q.tls == nullptr) return out;
  for (const SharedVar& v : s.vars) {
    if (v.offset > q.tls_bytes || v.bytes > q.tls_bytes - v.offset) return {};  // not this object's: stale
    out.emplace_back(static_cast<unsigned char*>(q.tls) + v.offset, v.bytes);
  }
  return out;
}

}  TT_NAMESPACE_END  // namespace tinytorch::backend::cuda::sim::detail

#endif  // TINYTORCH_CUDA_SIM
