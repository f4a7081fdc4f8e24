"""The DAPO trainer."""
