trap '(($? == 0)) || tpu_left_running' EXIT
