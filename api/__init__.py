"""The REST API: thin Django REST framework views over the runtime's services."""
