    set -gx {{NAME}} {{VALUE}}
