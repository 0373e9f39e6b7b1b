"""The benchmark suite (`python manage.py bench`): an app of the demo project, not shipped."""
