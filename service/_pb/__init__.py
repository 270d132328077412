"""Generated gRPC stubs for ``proto/kingrec/v1/service.proto`` (``python proto/generate.py``;
never edited by hand). The messages are ``kingrec.v1.service_pb2``."""
