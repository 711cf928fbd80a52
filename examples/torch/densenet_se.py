"""A DenseNet-style classifier with squeeze-and-excitation, written by hand:
dense blocks whose layers concatenate their output to their input (BN,
ReLU, 1x1 and 3x3 convolutions), a transition (1x1 convolution, average
pooling), an SE gate per block (adaptive average pooling, two linears,
sigmoid), dropout before the head, log-softmax output:

    python -m het.export examples/torch/densenet_se.py:classifier \\
        --input-shape 8,3,32,32 --train-steps 20 --precision f64 --check -o densenet_se.mlir

`classifier_dropout` uses p = 0.1 (also inside the dense layers).
The cross-entropy of het.export over log-probabilities is the model's
negative log-likelihood (log_softmax of log-probabilities changes nothing).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class DenseLayer(nn.Module):
    def __init__(self, channels, growth, dropout):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(channels)
        self.conv1 = nn.Conv2d(channels, 2 * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(2 * growth)
        self.conv2 = nn.Conv2d(2 * growth, growth, 3, padding=1, bias=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        y = self.conv1(F.relu(self.norm1(x)))
        y = self.drop(self.conv2(F.relu(self.norm2(y))))
        return torch.cat([x, y], dim=1)


class SqueezeExcite(nn.Module):
    def __init__(self, channels, reduction=4):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Linear(channels, channels // reduction)
        self.fc2 = nn.Linear(channels // reduction, channels)

    def forward(self, x):
        s = self.pool(x).flatten(1)
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(s))))
        return x * s[:, :, None, None]


class DenseBlock(nn.Module):
    def __init__(self, channels, growth, layers, dropout):
        super().__init__()
        self.layers = nn.Sequential(*[DenseLayer(channels + i * growth, growth, dropout)
                                      for i in range(layers)])
        self.se = SqueezeExcite(channels + layers * growth)

    def forward(self, x):
        return self.se(self.layers(x))


class Transition(nn.Module):
    def __init__(self, channels, out):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels)
        self.conv = nn.Conv2d(channels, out, 1, bias=False)
        self.pool = nn.AvgPool2d(2)

    def forward(self, x):
        return self.pool(self.conv(F.relu(self.norm(x))))


class Classifier(nn.Module):
    def __init__(self, classes=10, growth=8, layers=3, dropout=0.0):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        c = 16
        self.block1 = DenseBlock(c, growth, layers, dropout)
        c += layers * growth
        self.trans1 = Transition(c, c // 2)
        c //= 2
        self.block2 = DenseBlock(c, growth, layers, dropout)
        c += layers * growth
        self.norm = nn.BatchNorm2d(c)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        x = self.block2(self.trans1(self.block1(self.stem(x))))
        x = F.adaptive_avg_pool2d(F.relu(self.norm(x)), 1).flatten(1)
        return F.log_softmax(self.head(self.drop(x)), dim=-1)


def classifier():
    torch.manual_seed(0)
    return Classifier()


def classifier_dropout():
    torch.manual_seed(0)
    return Classifier(dropout=0.1)


if __name__ == "__main__":
    print(tuple(classifier()(torch.randn(2, 3, 32, 32)).shape))
