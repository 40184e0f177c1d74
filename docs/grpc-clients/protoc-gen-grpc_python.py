#!/usr/bin/env python3
"""protoc-gen-grpc_python: the gRPC Python generator of grpcio-tools (PyPI) as a protoc plugin.

grpcio-tools compiles its gRPC generator into its own protoc (`python -m grpc_tools.protoc
--grpc_python_out=...`) and ships no plugin executable, so buf cannot call it as it calls other
local plugins. This script is that plugin: it reads buf's CodeGeneratorRequest on stdin, hands the
request's files to grpcio-tools' protoc as a descriptor set (no .proto files or include paths
needed), and answers with the *_pb2_grpc.py files it wrote. The plugin parameter (buf's `opt`)
is passed on as grpc_python's options.

Needs only `pip install grpcio-tools`; see buf.gen.python.yaml beside it.
"""

import os
import sys
import tempfile

from google.protobuf import descriptor_pb2
from google.protobuf.compiler import plugin_pb2
from grpc_tools import protoc


def generate(request: plugin_pb2.CodeGeneratorRequest) -> plugin_pb2.CodeGeneratorResponse:
    response = plugin_pb2.CodeGeneratorResponse(
        supported_features=plugin_pb2.CodeGeneratorResponse.FEATURE_PROTO3_OPTIONAL
    )
    with tempfile.TemporaryDirectory(prefix="protoc-gen-grpc_python-") as folder:
        descriptor_set_path = os.path.join(folder, "input.binpb")
        with open(descriptor_set_path, "wb") as descriptor_set_file:
            descriptor_set = descriptor_pb2.FileDescriptorSet(file=request.proto_file)
            descriptor_set_file.write(descriptor_set.SerializeToString())
        output_folder = os.path.join(folder, "out")
        os.mkdir(output_folder)
        options = f"{request.parameter}:" if request.parameter else ""
        status = protoc.main(
            [
                "grpc_tools.protoc",
                f"--descriptor_set_in={descriptor_set_path}",
                f"--grpc_python_out={options}{output_folder}",
                *request.file_to_generate,
            ]
        )
        if status != 0:
            response.error = f"grpcio-tools' protoc exited with status {status}"
            return response
        for parent, _, names in os.walk(output_folder):
            for name in sorted(names):
                path = os.path.join(parent, name)
                with open(path, encoding="utf-8") as generated:
                    response.file.add(
                        name=os.path.relpath(path, output_folder), content=generated.read()
                    )
    return response


def main() -> None:
    request = plugin_pb2.CodeGeneratorRequest.FromString(sys.stdin.buffer.read())
    sys.stdout.buffer.write(generate(request).SerializeToString())


if __name__ == "__main__":
    main()
