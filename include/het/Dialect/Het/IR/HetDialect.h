//===- HetDialect.h - the het dialect, its enums and attributes -*- C++ -*-===//

#ifndef HET_DIALECT_HET_IR_HETDIALECT_H
#define HET_DIALECT_HET_IR_HETDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "het/Dialect/Het/IR/HetDialect.h.inc"
#include "het/Dialect/Het/IR/HetEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "het/Dialect/Het/IR/HetAttrs.h.inc"

#endif // HET_DIALECT_HET_IR_HETDIALECT_H
