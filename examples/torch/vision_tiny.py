"""torchvision CNNs and transformers with random weights (nothing is
downloaded) and 10 classes, for small inputs (3x32x32 and up):

    python -m het.export examples/torch/vision_tiny.py:resnet18 \\
        --input-shape 8,3,32,32 --train-steps 20 --precision f64 --check -o resnet18.mlir

`*_dropout` factories put dropout (p = 0.1) in the classifier head.
torchvision's models already return the logits.
"""

import torch
import torchvision


def resnet18():
    torch.manual_seed(0)
    return torchvision.models.resnet18(num_classes=10)


def mobilenet_v2():
    torch.manual_seed(0)
    return torchvision.models.mobilenet_v2(num_classes=10, dropout=0.0)


def mobilenet_v2_dropout():
    torch.manual_seed(0)
    return torchvision.models.mobilenet_v2(num_classes=10, dropout=0.1)


def densenet121():
    torch.manual_seed(0)
    return torchvision.models.densenet121(num_classes=10)


def densenet121_dropout():
    """Dropout after every dense layer (torchvision's drop_rate)."""
    torch.manual_seed(0)
    return torchvision.models.densenet121(num_classes=10, drop_rate=0.1)


def vit():
    """torchvision's VisionTransformer (nn.MultiheadAttention blocks) at a
    tiny size: 8x8 patches of a 32x32 image, 2 layers of width 64, 4 heads."""
    from torchvision.models import VisionTransformer

    torch.manual_seed(0)
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                             hidden_dim=64, mlp_dim=128, num_classes=10)


def convnext():
    """torchvision's ConvNeXt (depthwise 7x7 convolutions, channels-last
    LayerNorm, layer scale) at a tiny size: two stages of one block, 16 and
    32 channels."""
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    torch.manual_seed(0)
    return ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], num_classes=10)


MODELS = {"resnet18": resnet18, "mobilenet_v2": mobilenet_v2, "densenet121": densenet121,
          "vit": vit, "convnext": convnext}

if __name__ == "__main__":
    x = torch.randn(2, 3, 32, 32)
    for name, factory in MODELS.items():
        print(name, tuple(factory()(x).shape))
