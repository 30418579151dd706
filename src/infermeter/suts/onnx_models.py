"""Ready ONNX models: the real network graphs the ``onnx`` package ships, with weights filled in.

``onnx/backend/test/data/light/light_*.onnx`` hold full graphs (ResNet-50: 53
Conv, 53 BatchNorm, Gemm, Softmax) whose weights were stripped: every weight is
a ``ConstantOfShape`` of 0.02, so every class scores the same. We replace each
with a seeded random initializer of the right shape (He-normal convolutions,
identity batch norm, zero biases) and make the batch dimension dynamic. The
forward pass is the real one; the predictions are meaningless (random weights).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from infermeter.errors import ConfigError, MissingDependencyError

SHAPE_SUFFIX = "__SHAPE"
LIGHT_MODELS = (
    "resnet50",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
    "bvlc_alexnet",
)


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise MissingDependencyError("onnx", "onnx") from None
    return onnx


def light_model_path(name: str = "resnet50") -> Path:
    """Path of ``light_<name>.onnx`` in the installed ``onnx`` package."""
    onnx = _onnx()
    if name not in LIGHT_MODELS:
        raise ConfigError(
            f"Unknown built-in model {name!r}. Known: {', '.join(LIGHT_MODELS)}."
        )
    path = Path(onnx.__file__).parent / "backend/test/data/light" / f"light_{name}.onnx"
    if not path.exists():
        raise ConfigError(
            f"This onnx install lacks {path.name}; pass --sut-opt model=PATH.onnx."
        )
    return path


def materialize_light_model(name: str = "resnet50", *, seed: int = 0) -> bytes:
    """The light model with seeded random weights and a dynamic batch, serialized."""
    onnx = _onnx()
    model = onnx.load(str(light_model_path(name)))
    graph = model.graph
    shapes = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
    rng = np.random.default_rng(seed)
    keep_nodes = []
    new_inits = []
    for node in graph.node:
        shape_name = node.input[0] if node.input else ""
        if node.op_type == "ConstantOfShape" and shape_name.endswith(SHAPE_SUFFIX):
            shape = tuple(int(d) for d in shapes[shape_name])
            values = _init_values(node.output[0], shape, rng)
            new_inits.append(onnx.numpy_helper.from_array(values, node.output[0]))
        else:
            keep_nodes.append(node)
    _reshape_to_dynamic_batch(onnx, graph, keep_nodes)
    del graph.node[:]
    graph.node.extend(keep_nodes)
    used = {i for n in keep_nodes for i in n.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend([*kept, *new_inits])
    _drop_initializer_inputs(graph, used)
    for value in (graph.input[0], graph.output[0]):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    return bytes(model.SerializeToString())


def _init_values(name: str, shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    # Caffe2 names: *_w_0 weights, *_b_0 biases, *_bn_{s,b,rm,riv}_0 batch norm.
    if "_bn_s" in name or "_bn_riv" in name:
        return np.ones(shape, np.float32)
    if len(shape) >= 2:
        fan_in = int(np.prod(shape[1:]))
        gain = 2.0 if len(shape) == 4 else 1.0
        std = np.sqrt(gain / max(fan_in, 1))
        return (rng.standard_normal(shape) * std).astype(np.float32)
    return np.zeros(shape, np.float32)


def _reshape_to_dynamic_batch(onnx: Any, graph: Any, nodes: list[Any]) -> None:
    targets = {n.input[1] for n in nodes if n.op_type == "Reshape" and len(n.input) > 1}
    for tensor in graph.initializer:
        if tensor.name in targets:
            shape = onnx.numpy_helper.to_array(tensor).copy()
            shape[0] = -1
            tensor.CopyFrom(onnx.numpy_helper.from_array(shape, tensor.name))


def _drop_initializer_inputs(graph: Any, used: set[str]) -> None:
    # Old exports list every weight as a graph input too; keep only real inputs.
    weights = {t.name for t in graph.initializer}
    real = [i for i in graph.input if i.name in used and i.name not in weights]
    del graph.input[:]
    graph.input.extend(real)
