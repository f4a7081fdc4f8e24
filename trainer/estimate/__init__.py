"""`verimath train --estimate`: memory per GPU and time per step (`budget`) from a model's shape
and a GPU (`shapes`), and its command (`cli`)."""
