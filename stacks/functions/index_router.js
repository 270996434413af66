// WheelGate index router: CloudFront Function (cloudfront-js-2.0), viewer request.
//
// Maps a directory URL of the simple index to the page object S3 holds:
//   /<dir>/ and /<dir>  ->  /<dir>/index.html, or /<dir>/index.json when the client's Accept
//                           header prefers the PEP 691 JSON form.
// Paths whose last segment has an extension are files and pass through unchanged.
// The Accept header is rewritten to the one flavour chosen, because it is part of the cache
// key: raw Accept values differ per client and would split the cache for no benefit.
// Requests with dot segments or malformed percent-encoding are refused with 400.

var JSON_TYPES = ['application/vnd.pypi.simple.v1+json', 'application/vnd.pypi.simple.latest+json'];
var HTML_TYPES = [
    'application/vnd.pypi.simple.v1+html',
    'application/vnd.pypi.simple.latest+html',
    'text/html',
    'text/*',
    '*/*',
];
var JSON_ACCEPT = 'application/vnd.pypi.simple.v1+json';
var HTML_ACCEPT = 'text/html';

// Highest q-value given to any of `types` in an Accept header (0 when none is listed).
function bestQuality(accept, types) {
    var best = 0;
    var ranges = accept.split(',');
    for (var i = 0; i < ranges.length; i++) {
        var params = ranges[i].split(';');
        var type = params[0].trim().toLowerCase();
        if (types.indexOf(type) === -1) {
            continue;
        }
        var q = 1;
        for (var j = 1; j < params.length; j++) {
            var param = params[j].trim().toLowerCase();
            if (param.indexOf('q=') === 0) {
                q = parseFloat(param.substring(2));
                if (isNaN(q) || q < 0 || q > 1) {
                    q = 0;
                }
            }
        }
        if (q > best) {
            best = q;
        }
    }
    return best;
}

// True when the client asks for the JSON page at least as strongly as for HTML.
function wantsJson(headers) {
    var header = headers.accept;
    if (!header || !header.value) {
        return false;
    }
    var json = bestQuality(header.value, JSON_TYPES);
    return json > 0 && json >= bestQuality(header.value, HTML_TYPES);
}

function badRequest() {
    return {
        statusCode: 400,
        statusDescription: 'Bad Request',
        headers: { 'cache-control': { value: 'no-store' } },
    };
}

function handler(event) {
    var request = event.request;
    var json = wantsJson(request.headers);
    request.headers.accept = { value: json ? JSON_ACCEPT : HTML_ACCEPT };

    // Collapse doubled slashes so //v2//gfx/ and /v2/gfx/ are one page and one cache entry.
    var segments = request.uri.split('/').filter(function (s) { return s.length > 0; });
    for (var i = 0; i < segments.length; i++) {
        var decoded;
        try {
            decoded = decodeURIComponent(segments[i]);
        } catch (e) {
            return badRequest();
        }
        if (decoded === '.' || decoded === '..' || decoded.indexOf('/') !== -1 ||
            decoded.indexOf('\\') !== -1 || decoded.indexOf('\0') !== -1) {
            return badRequest();
        }
    }

    var last = segments.length > 0 ? segments[segments.length - 1] : '';
    var isDirectory = request.uri.charAt(request.uri.length - 1) === '/' || last.indexOf('.') === -1;
    // A literal '+' (local version labels: torch-2.7.0+rocm7.0-...) is sent to S3 as %2B, which
    // S3 cannot mistake for an encoded space.
    var path = segments.length > 0 ? '/' + segments.join('/').replace(/\+/g, '%2B') : '';
    request.uri = isDirectory ? path + '/' + (json ? 'index.json' : 'index.html') : path;
    return request;
}
