# Read by cpack for each generator (CPACK_PROJECT_CONFIG_FILE in Install.cmake).
if(CPACK_GENERATOR STREQUAL "DEB")
  set(CPACK_PACKAGING_INSTALL_PREFIX /opt/het)
else()
  # The archive's top folder is the prefix: het-<version>-Linux/bin/...
  set(CPACK_PACKAGING_INSTALL_PREFIX /)
endif()
