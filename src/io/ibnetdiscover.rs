//! ibnetdiscover text format (in progress).
