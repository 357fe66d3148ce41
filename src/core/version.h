/* ksight's version, for `ksight version`, recordings and the exporter's ksight_build_info. */
#ifndef KS_CORE_VERSION_H
#define KS_CORE_VERSION_H

#define KSIGHT_VERSION "0.1.0"

#endif
