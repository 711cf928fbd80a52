# What `cmake --install build --prefix P` puts into P, and the packages other
# projects find there (docs/install.md). One GNUInstallDirs tree:
#
#   bin/        het-opt het-eval het-plan het-sim het-compile het-run hetccl-bench
#   lib/        libhetrt.so libhetccl.so libHetCheckpoint.a
#               het/rocm-toolkit/ (links to lld and the ROCm device libraries)
#               cmake/{het,hetccl}/  pkgconfig/hetccl.pc
#   include/    het-c/{hetccl.h,hetccl_fault.h,hetrt.h}  het/Checkpoint/
#   share/het/  devices/ (the device catalog), profiles/, examples/
#   share/doc/het/  README.md and docs/
#
# Every path a tool needs is found relative to the tool (InstallLayout.cpp)
# and every RPATH is $ORIGIN-relative, so the tree can be moved.
include(CMakePackageConfigHelpers)

# A CMake package <name> in lib/cmake/<name>: the targets of the export set
# <name>Targets (namespace <name>::), <name>Config.cmake made from
# cmake/<name>Config.cmake.in, and a version file accepting the same major
# and minor version.
function(het_install_package name)
  set(destination ${HET_INSTALL_CMAKEDIR}/${name})
  set(config ${PROJECT_BINARY_DIR}/cmake/${name}Config.cmake)
  set(version ${PROJECT_BINARY_DIR}/cmake/${name}ConfigVersion.cmake)
  install(EXPORT ${name}Targets NAMESPACE ${name}:: DESTINATION ${destination})
  configure_package_config_file(cmake/${name}Config.cmake.in ${config}
    INSTALL_DESTINATION ${destination})
  write_basic_package_version_file(${version} VERSION ${PROJECT_VERSION}
    COMPATIBILITY SameMinorVersion)
  install(FILES ${config} ${version} DESTINATION ${destination})
endfunction()

# --- hetccl: the collective library, a package of its own -------------------
install(TARGETS hetccl EXPORT hetcclTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET hetccl-bench)
  install(TARGETS hetccl-bench EXPORT hetcclTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# het-tune writes the tuning database hetccl reads (docs/tuning.md).
install(TARGETS het-tune RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES include/het-c/hetccl.h include/het-c/hetccl_fault.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/het-c)
het_install_package(hetccl)

# pkg-config: the prefix is computed from where the .pc file is, so a moved
# tree stays right (pkg-config defines ${pcfiledir}).
set(HET_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH HET_PKGCONFIG_TO_PREFIX /prefix/${HET_PKGCONFIGDIR} /prefix)
configure_file(cmake/hetccl.pc.in ${PROJECT_BINARY_DIR}/cmake/hetccl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/hetccl.pc DESTINATION ${HET_PKGCONFIGDIR})

# --- het: runtime, checkpoints, tools ----------------------------------------
install(TARGETS HetCheckpoint EXPORT hetTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/het/Checkpoint DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/het)
if(HET_ENABLE_MLIR)
  install(TARGETS hetrt EXPORT hetTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(FILES include/het-c/hetrt.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/het-c)
  install(TARGETS het-opt het-eval het-plan het-sim het-compile het-run EXPORT hetTargets
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
het_install_package(het)

# --- data, examples, docs ----------------------------------------------------
install(DIRECTORY data/devices data/profiles DESTINATION ${HET_INSTALL_DATADIR})
install(DIRECTORY examples/ DESTINATION ${HET_INSTALL_DATADIR}/examples
  PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} PATTERN "CMakeLists.txt" EXCLUDE)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

# --- packages: cpack -G DEB / TGZ (docs/install.md) --------------------------
set(CPACK_PACKAGE_NAME het)
set(CPACK_PACKAGE_VENDOR "het")
set(CPACK_PACKAGE_CONTACT "het developers <het@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Compiler, autotuner and collective library for training on mixed chips")
set(CPACK_PACKAGE_INSTALL_DIRECTORY het)
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_SOURCE_GENERATOR "")
# Binaries in packages without debug information (the build tree keeps it).
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The .deb installs into /opt/het (the tree is relocatable, and /opt keeps
# it apart from Debian's own /usr); the .tar.gz holds the tree itself, to be
# unpacked anywhere. CPackOptions.cmake chooses per generator.
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/CPackOptions.cmake)
# dpkg-shlibdeps turns the binaries' shared libraries into Depends.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# ... and what it runs: het-compile links with the system's compiler driver;
# AMD code objects need lld and the ROCm device libraries; matrix products
# a tuning database chose OpenBLAS for open its OpenMP build (dlopen).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "gcc | clang-19, libc6-dev")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "lld-19, rocm-device-libs, libopenblas0-openmp")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
include(CPack)
