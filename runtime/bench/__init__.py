"""The benchmark suite behind `python manage.py bench`."""
