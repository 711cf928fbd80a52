//===- HetOps.cpp - op definitions and custom assembly ---------------------===//
//
// Holds the TableGen'd op definitions and the hand-written parts of the
// assembly: the collective options and the stage header. Verifiers, shape
// rules and folds live in their own files, one concern each.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::het;

//===----------------------------------------------------------------------===//
// custom<CollectiveOptions>:
//   (`algorithm` ALG)? (`compression` (KIND | `topk` `(` RATIO `)`))?
// Defaults (auto, none) are not printed.
//===----------------------------------------------------------------------===//

/// Parses a bare keyword naming a value of an enum, with an error that lists
/// the accepted spellings.
template <typename EnumT>
static ParseResult
parseEnumKeyword(OpAsmParser &parser,
                 std::optional<EnumT> (*symbolize)(StringRef), StringRef what,
                 StringRef expected, std::optional<EnumT> &value) {
  StringRef name;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&name))
    return failure();
  value = symbolize(name);
  if (!value)
    return parser.emitError(loc) << "unknown " << what << " '" << name
                                 << "'; expected " << expected;
  return success();
}

static ParseResult parseCollectiveOptions(OpAsmParser &parser,
                                          CollectiveAlgorithmAttr &algorithm,
                                          CompressionKindAttr &compression,
                                          FloatAttr &topkRatio) {
  MLIRContext *ctx = parser.getContext();
  if (succeeded(parser.parseOptionalKeyword("algorithm"))) {
    std::optional<CollectiveAlgorithm> value;
    if (parseEnumKeyword(parser, symbolizeCollectiveAlgorithm,
                         "collective algorithm",
                         "auto, ring, tree, halving_doubling, hierarchical or ps",
                         value))
      return failure();
    algorithm = CollectiveAlgorithmAttr::get(ctx, *value);
  }
  if (succeeded(parser.parseOptionalKeyword("compression"))) {
    std::optional<CompressionKind> value;
    if (parseEnumKeyword(parser, symbolizeCompressionKind, "compression",
                         "none, fp16, bf16, int8 or topk(RATIO)", value))
      return failure();
    compression = CompressionKindAttr::get(ctx, *value);
    if (*value == CompressionKind::TopK) {
      double ratio;
      if (parser.parseLParen() || parser.parseFloat(ratio) ||
          parser.parseRParen())
        return failure();
      topkRatio = parser.getBuilder().getF64FloatAttr(ratio);
    }
  }
  return success();
}

// The printers below start each item with a space and the format places them
// after an empty literal, so absent options leave no double space.
static void printCollectiveOptions(OpAsmPrinter &printer, Operation *,
                                   CollectiveAlgorithmAttr algorithm,
                                   CompressionKindAttr compression,
                                   FloatAttr topkRatio) {
  if (algorithm && algorithm.getValue() != CollectiveAlgorithm::Auto)
    printer << " algorithm "
            << stringifyCollectiveAlgorithm(algorithm.getValue());
  if (compression && compression.getValue() != CompressionKind::None)
    printer << " compression "
            << stringifyCompressionKind(compression.getValue());
  if (topkRatio) {
    // Without topk compression the ratio is invalid (the verifier says so),
    // but it is still printed so that a broken op dumps faithfully.
    if (!compression || compression.getValue() == CompressionKind::None)
      printer << " compression none";
    printer << "(";
    printer.printFloat(topkRatio.getValue());
    printer << ")";
  }
}

static ParseResult parseReduction(OpAsmParser &parser,
                                  ReductionKindAttr &reduction) {
  std::optional<ReductionKind> value;
  if (parseEnumKeyword(parser, symbolizeReductionKind, "reduction",
                       "sum, prod, min, max or avg", value))
    return failure();
  reduction = ReductionKindAttr::get(parser.getContext(), *value);
  return success();
}

static void printReduction(OpAsmPrinter &printer, Operation *,
                           ReductionKindAttr reduction) {
  printer << " " << stringifyReductionKind(reduction.getValue());
}

//===----------------------------------------------------------------------===//
// StageOp assembly:
//   het.stage @name on <group> replicas N [samples S] (, <group> replicas N
//       [samples S])* layers [B, E) [tensor_parallel T]
//       (%arg: type, ...) attributes {...} { body }
//===----------------------------------------------------------------------===//

void StageOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                    ArrayRef<ReplicaGroupAttr> replicaGroups, int64_t layerBegin,
                    int64_t layerEnd, int64_t tensorParallel, TypeRange argumentTypes) {
  Properties &props = state.getOrAddProperties<Properties>();
  props.sym_name = builder.getStringAttr(name);
  props.replica_groups = builder.getArrayAttr(
      SmallVector<Attribute>(replicaGroups.begin(), replicaGroups.end()));
  props.layer_begin = builder.getI64IntegerAttr(layerBegin);
  props.layer_end = builder.getI64IntegerAttr(layerEnd);
  props.tensor_parallel = builder.getI64IntegerAttr(tensorParallel);
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Type type : argumentTypes)
    block->addArgument(type, state.location);
  ensureTerminator(*body, builder, state.location);
}

ParseResult StageOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &builder = parser.getBuilder();
  StringAttr name;
  int64_t begin, end, tensorParallel = 1;
  if (parser.parseSymbolName(name) || parser.parseKeyword("on"))
    return failure();
  SmallVector<Attribute> groups;
  do {
    SymbolRefAttr group;
    int64_t replicas, samples = 0;
    SMLoc at = parser.getCurrentLocation();
    if (parser.parseAttribute(group) || parser.parseKeyword("replicas") ||
        parser.parseInteger(replicas))
      return failure();
    if (succeeded(parser.parseOptionalKeyword("samples")) && parser.parseInteger(samples))
      return failure();
    auto attr = ReplicaGroupAttr::getChecked(
        [&] { return parser.emitError(at); }, builder.getContext(), group, replicas, samples);
    if (!attr)
      return failure();
    groups.push_back(attr);
  } while (succeeded(parser.parseOptionalComma()));
  if (parser.parseKeyword("layers") || parser.parseLSquare() || parser.parseInteger(begin) ||
      parser.parseComma() || parser.parseInteger(end) || parser.parseRParen())
    return failure();
  if (succeeded(parser.parseOptionalKeyword("tensor_parallel")) &&
      parser.parseInteger(tensorParallel))
    return failure();
  Properties &props = result.getOrAddProperties<Properties>();
  props.sym_name = name;
  props.replica_groups = builder.getArrayAttr(groups);
  props.layer_begin = builder.getI64IntegerAttr(begin);
  props.layer_end = builder.getI64IntegerAttr(end);
  props.tensor_parallel = builder.getI64IntegerAttr(tensorParallel);

  SmallVector<OpAsmParser::Argument> arguments;
  if (parser.parseArgumentList(arguments, OpAsmParser::Delimiter::OptionalParen,
                               /*allowType=*/true))
    return failure();
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, arguments, /*enableNameShadowing=*/false))
    return failure();
  StageOp::ensureTerminator(*body, builder, result.location);
  return success();
}

void StageOp::print(OpAsmPrinter &p) {
  p << " ";
  p.printSymbolName(getSymName());
  p << " on ";
  llvm::interleaveComma(getReplicaGroupList(), p, [&](ReplicaGroupAttr group) {
    p << group.getGroup() << " replicas " << group.getReplicas();
    if (group.getSamples() > 0)
      p << " samples " << group.getSamples();
  });
  p << " layers [" << getLayerBegin() << ", " << getLayerEnd() << ")";
  if (getTensorParallel() != 1)
    p << " tensor_parallel " << getTensorParallel();
  Block &block = getBodyBlock();
  if (block.getNumArguments() != 0) {
    p << " (";
    llvm::interleaveComma(block.getArguments(), p, [&](BlockArgument arg) {
      p.printRegionArgument(arg);
    });
    p << ")";
  }
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(), {getSymNameAttrName(), getReplicaGroupsAttrName(),
                            getLayerBeginAttrName(), getLayerEndAttrName(),
                            getTensorParallelAttrName()});
  p << " ";
  bool printTerminator = getYield() && getYield().getNumOperands() != 0;
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/printTerminator);
}

SmallVector<ReplicaGroupAttr> StageOp::getReplicaGroupList() {
  SmallVector<ReplicaGroupAttr> groups;
  for (Attribute a : getReplicaGroups())
    groups.push_back(cast<ReplicaGroupAttr>(a));
  return groups;
}

int64_t StageOp::getReplicas() {
  int64_t total = 0;
  for (ReplicaGroupAttr group : getReplicaGroupList())
    total += group.getReplicas();
  return total;
}

int64_t StageOp::getMicroBatchSamples() {
  int64_t total = 0;
  for (ReplicaGroupAttr group : getReplicaGroupList()) {
    if (group.getSamples() == 0)
      return 0;
    total += group.getReplicas() * group.getSamples();
  }
  return total;
}

YieldOp StageOp::getYield() {
  if (getBody().empty() || getBodyBlock().empty())
    return nullptr;
  return dyn_cast<YieldOp>(getBodyBlock().back());
}

#define GET_OP_CLASSES
#include "het/Dialect/Het/IR/HetOps.cpp.inc"

#include "het/Dialect/Het/IR/HetInterfaces.cpp.inc"
