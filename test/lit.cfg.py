# lit configuration for het's regression tests.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "het"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "unittests", "ccl", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.het_obj_root, "test")

config.substitutions.append(("%het_src_root", config.het_src_root))
config.substitutions.append(("%het_obj_root", config.het_obj_root))
config.substitutions.append(("%python", config.python_executable))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# Scripts that run het tools themselves find them on PATH.
llvm_config.with_environment("PATH", config.het_tools_dir, append_path=True)
# het-compile's object cache: the build's own, not the user's ~/.cache.
config.environment["HET_CACHE_DIR"] = os.path.join(config.het_obj_root, "test", "object-cache")
tool_dirs = [config.het_tools_dir, config.llvm_tools_dir]
tools = ["het-opt", "het-eval", "het-compile"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Tests that run code on the AVX512-BF16 dot product need a CPU with it
# (Linux names the flag avx512_bf16); FileCheck tests of that code do not.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        if "avx512_bf16" in cpuinfo.read().split():
            config.available_features.add("avx512bf16")
except OSError:
    pass
