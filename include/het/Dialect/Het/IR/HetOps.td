//===- HetOps.td - all ops of the het dialect --------------*- tablegen -*-===//
//
// The ops live in one file per family; this file only gathers them so that
// one TableGen invocation produces one op list for the dialect.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_IR_HETOPS_TD
#define HET_DIALECT_HET_IR_HETOPS_TD

include "het/Dialect/Het/IR/HetComputeOps.td"
include "het/Dialect/Het/IR/HetLayoutOps.td"
include "het/Dialect/Het/IR/HetMoEOps.td"
include "het/Dialect/Het/IR/HetRandomOps.td"
include "het/Dialect/Het/IR/HetStructureOps.td"
include "het/Dialect/Het/IR/HetCollectiveOps.td"

#endif // HET_DIALECT_HET_IR_HETOPS_TD
