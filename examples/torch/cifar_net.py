"""The convolutional network of PyTorch's "Training a Classifier" tutorial
(CIFAR-10, 3x32x32 images, 10 classes), written exactly as the tutorial does.
The het tests never import this file; it shows that an ordinary model file
goes through the command line alone:

    python -m het.export examples/torch/cifar_net.py:Net \\
        --input-shape 16,3,32,32 --loss cross_entropy -o /tmp/net.mlir \\
        --train-steps 20 --lr 0.01 --check
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)  # flatten all dimensions except batch
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x
