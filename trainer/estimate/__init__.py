"""`verimath train --estimate`: memory per GPU and time per step from a model's shape (`budget`), and its command (`cli`)."""
