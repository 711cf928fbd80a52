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
//   het.stage @name on @cluster::@group replicas N layers [B, E)
//       (%arg: type, ...) attributes {...} { body }
//===----------------------------------------------------------------------===//

void StageOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                    SymbolRefAttr deviceGroup, int64_t replicas,
                    int64_t layerBegin, int64_t layerEnd,
                    TypeRange argumentTypes) {
  Properties &props = state.getOrAddProperties<Properties>();
  props.sym_name = builder.getStringAttr(name);
  props.device_group = deviceGroup;
  props.replicas = builder.getI64IntegerAttr(replicas);
  props.layer_begin = builder.getI64IntegerAttr(layerBegin);
  props.layer_end = builder.getI64IntegerAttr(layerEnd);
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
  SymbolRefAttr group;
  int64_t replicas, begin, end;
  if (parser.parseSymbolName(name) || parser.parseKeyword("on") ||
      parser.parseAttribute(group) || parser.parseKeyword("replicas") ||
      parser.parseInteger(replicas) || parser.parseKeyword("layers") ||
      parser.parseLSquare() || parser.parseInteger(begin) ||
      parser.parseComma() || parser.parseInteger(end) || parser.parseRParen())
    return failure();
  Properties &props = result.getOrAddProperties<Properties>();
  props.sym_name = name;
  props.device_group = group;
  props.replicas = builder.getI64IntegerAttr(replicas);
  props.layer_begin = builder.getI64IntegerAttr(begin);
  props.layer_end = builder.getI64IntegerAttr(end);

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
  p << " on " << getDeviceGroupAttr() << " replicas " << getReplicas()
    << " layers [" << getLayerBegin() << ", " << getLayerEnd() << ")";
  Block &block = getBodyBlock();
  if (block.getNumArguments() != 0) {
    p << " (";
    llvm::interleaveComma(block.getArguments(), p, [&](BlockArgument arg) {
      p.printRegionArgument(arg);
    });
    p << ")";
  }
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(), {getSymNameAttrName(), getDeviceGroupAttrName(),
                            getReplicasAttrName(), getLayerBeginAttrName(),
                            getLayerEndAttrName()});
  p << " ";
  bool printTerminator = getYield() && getYield().getNumOperands() != 0;
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/printTerminator);
}

YieldOp StageOp::getYield() {
  if (getBody().empty() || getBodyBlock().empty())
    return nullptr;
  return dyn_cast<YieldOp>(getBodyBlock().back());
}

#define GET_OP_CLASSES
#include "het/Dialect/Het/IR/HetOps.cpp.inc"

#include "het/Dialect/Het/IR/HetInterfaces.cpp.inc"
