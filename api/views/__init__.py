"""Thin DRF views over the runtime's services: ids in, a service call, a serializer out."""
